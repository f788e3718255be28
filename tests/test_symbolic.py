"""The symbolic proofs of App. A (gated_attention/symbolic.py), each with a twin that must fail."""

import pytest
import sympy as sp
import torch

from gated_attention import random_attention
from gated_attention.constructions.gated_rnn import VARIANTS, construct_rnn, neuron_count
from gated_attention.constructions.symbolic import (
    attention_outputs,
    count_terms,
    numeric_errors,
    symbol_inputs,
    symbol_matrix,
    symbolic_attention,
    symbolic_construction,
    symbolic_rnn,
    symbolic_weights,
)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("d", [1, 2, 3])
def test_construction_difference_is_zero(variant, d):
    proof = symbolic_construction(variant, d, T=3)
    assert len(proof.differences) == 3 and all(len(row) == d for row in proof.differences)
    assert proof.is_zero
    assert proof.nonzero_terms == 0


def _bump_W_in2(W):
    W["W_in2"][0, 0] += 1  # first key-value neuron reads a wrong key


def _query_remembers(W):
    W["lam"][W["lam"].shape[0] - 1] = 1  # last query neuron (lam = 0) turned into an integrator


def _side_gate_off(W):
    W["W_side"][0, 0] = 0  # one entry of the side gate q[j] dropped


@pytest.mark.parametrize(
    ("variant", "perturb"),
    [
        ("full", _bump_W_in2),
        ("full", _query_remembers),
        ("symmetric", _bump_W_in2),
        ("symmetric", _query_remembers),
        ("low_rank", _bump_W_in2),
        ("low_rank", _query_remembers),
        ("side", _bump_W_in2),
        ("side", _side_gate_off),
    ],
)
def test_perturbed_construction_is_caught(variant, perturb):
    proof = symbolic_construction(variant, 2, T=3, perturb=perturb)
    assert not proof.is_zero
    assert proof.nonzero_terms > 0


def test_symmetric_needs_the_inverse():
    """With W_Q' = W_K^T W_Q (the inverse of W_V^T forgotten) the proof must fail."""

    def forget_inverse(W):
        d = (W["W_in1"].shape[1]) - 1
        W_K, W_Q = symbol_matrix("K", d, d), symbol_matrix("Q", d, d)
        W["W_in2"][W["W_in2"].shape[0] - d :, :d] = W_K.T * W_Q

    assert not symbolic_construction("symmetric", 2, T=2, perturb=forget_inverse).is_zero


def test_symbolic_weights_follow_the_torch_construction():
    """Substituting numbers into the symbolic weights gives construct_rnn's weights."""
    layer = random_attention(3, seed=4)
    rnn = construct_rnn(layer, "full")
    names = {"V": layer.W_V.detach(), "K": layer.W_K.detach(), "Q": layer.W_Q.detach()}
    mats = {f"W_{s}": symbol_matrix(s, 3, 3) for s in names}
    subs = {
        mats[f"W_{s}"][i, j]: float(w[i, j])
        for s, w in names.items()
        for i in range(3)
        for j in range(3)
    }
    W = symbolic_weights("full", **mats)
    for key in ("W_in1", "W_in2", "W_out1", "W_out2", "D"):
        got = torch.tensor(W[key].subs(subs).tolist(), dtype=torch.float64)
        assert torch.equal(got, getattr(rnn, key).detach()), key
    assert torch.equal(torch.tensor(W["lam"].T.tolist()[0], dtype=torch.float64), rnn.lam)


@pytest.mark.parametrize("variant", VARIANTS)
def test_symbolic_weight_shapes_match_neuron_count(variant):
    d = 3
    if variant == "low_rank":
        proof = symbolic_construction(variant, d, T=1, r_V=2, r_KQ=1)
        expected = neuron_count(variant, d, r_V=2, r_KQ=1)
    else:
        proof = symbolic_construction(variant, d, T=1)
        expected = neuron_count(variant, d)
    assert proof.weights["W_in1"].shape == (expected["n"], d + 1)
    if variant != "side":
        assert proof.weights["W_out1"].shape == (expected["m"], expected["n"])


def test_attention_outputs_match_torch():
    """Eq. (1) in sympy evaluated at numbers equals LinearSelfAttention."""
    d, T = 2, 3
    att = symbolic_attention(d, T)
    layer = random_attention(d, seed=1)
    x = torch.randn(1, T, d, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    subs = {}
    for M, w in ((att.W_V, layer.W_V), (att.W_K, layer.W_K), (att.W_Q, layer.W_Q)):
        w = w.detach()
        subs.update({M[i, j]: float(w[i, j]) for i in range(d) for j in range(d)})
    for t in range(T):
        subs.update({att.xs[t][i]: float(x[0, t, i]) for i in range(d)})
    got = torch.tensor([[float(e.subs(subs)) for e in y] for y in att.ys], dtype=torch.float64)
    torch.testing.assert_close(got, layer(x)[0].detach(), rtol=1e-12, atol=1e-12)


def test_symbolic_rnn_runs_the_recurrence():
    """A single neuron with lam = 1 integrates x_t^2; with lam = 0 it forgets."""
    xs = symbol_inputs(1, 3)
    x1, x2, x3 = (x[0] for x in xs)
    W = {
        "W_in1": sp.Matrix([[1, 0]]),
        "W_in2": sp.Matrix([[1, 0]]),
        "lam": sp.Matrix([1]),
        "W_out1": sp.Matrix([[1]]),
        "W_out2": sp.Matrix([[1]]),
        "D": sp.Matrix([[1]]),
    }
    assert sp.expand(symbolic_rnn(W, xs)[2][0] - (x1**2 + x2**2 + x3**2) ** 2) == 0
    W["lam"] = sp.Matrix([0])
    assert sp.expand(symbolic_rnn(W, xs)[2][0] - x3**4) == 0


def test_attention_outputs_accepts_rectangular_weights():
    W_V, W_K, W_Q = symbol_matrix("V", 1, 2), symbol_matrix("K", 1, 2), symbol_matrix("Q", 1, 2)
    ys = attention_outputs(W_V, W_K, W_Q, symbol_inputs(2, 2))
    assert len(ys) == 2 and ys[0].shape == (1, 1)
    assert count_terms(ys[0][0]) == 2 * 2 * 2  # (V x)(K x)(Q x): 2 x 2 x 2 monomials


def test_count_terms():
    x, y = sp.symbols("x y")
    assert count_terms(sp.Integer(0)) == 0
    assert count_terms((x + y) ** 2) == 3


def test_bad_input_raises():
    with pytest.raises(ValueError, match="unknown variant"):
        symbolic_construction("dense", 2)
    with pytest.raises(ValueError, match="d must be a positive integer"):
        symbolic_construction("full", 0)
    with pytest.raises(ValueError, match="r_V must be"):
        symbolic_construction("low_rank", 2, r_V=3)
    with pytest.raises(ValueError, match="unknown variant"):
        numeric_errors("dense")


@pytest.mark.parametrize("variant", VARIANTS)
def test_numeric_errors_are_rounding_only(variant):
    errors = numeric_errors(variant, ds=[1, 3], seeds=[0], T=8, batch=4)
    assert set(errors) == {1, 3}
    assert all(0 <= e < 1e-10 for e in errors.values())
