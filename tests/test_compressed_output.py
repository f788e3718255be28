"""Compressed output gating (gated_attention/constructions/compressed_output.py): d(d+1)/2
output-gating neurons compute attention exactly, a broken recipe does not, and the lower
bound."""

import pytest
import torch

from gated_attention.constructions.compressed_output import (
    column_rank,
    compressed_errors,
    compressed_neuron_count,
    construct_compressed,
    product_matrix,
    symmetric_product_matrix,
)
from gated_attention.constructions.gated_rnn import ConstructionError
from gated_attention.constructions.symbolic import symbolic_compressed
from gated_attention.models.attention import LinearSelfAttention, random_attention


def _inputs(d, T=16, B=8, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, T, d, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 6])
def test_equals_attention_in_float64(d):
    layer = random_attention(d, seed=d)
    rnn = construct_compressed(layer)
    x = _inputs(d)
    with torch.no_grad():
        y = layer(x)
        assert (rnn(x) - y).abs().max() / y.abs().max() < 1e-12
        assert (rnn(x, mode="reference") - y).abs().max() / y.abs().max() < 1e-12


def test_every_d_up_to_8_is_exact():
    errors = compressed_errors(range(1, 9), seeds=range(2), T=16, batch=4)
    assert max(errors.values()) < 1e-10


@pytest.mark.parametrize("name", ["D", "W_out1", "W_out2"])
def test_a_perturbed_construction_fails(name):
    layer = random_attention(4, seed=0)
    rnn = construct_compressed(layer)
    with torch.no_grad():
        getattr(rnn, name)[0, 0] += 0.1
        x = _inputs(4)
        y = layer(x)
        assert (rnn(x) - y).abs().max() / y.abs().max() > 1e-4


def test_the_diagonal_correction_is_needed():
    """Without the -sum_{j != i} h_(i,j) of the diagonal neurons, y is wrong."""
    layer = random_attention(3, seed=0)
    rnn = construct_compressed(layer)
    with torch.no_grad():
        for k in range(rnn.m):
            row = rnn.W_out1[k]
            if (row != 0).sum() > 1:  # a diagonal neuron: h_ii minus its row's pairs
                row[row < 0] = 0.0
        x = _inputs(3)
        assert (rnn(x) - layer(x)).abs().max() > 1e-3


@pytest.mark.parametrize("d", range(1, 9))
def test_neuron_count(d):
    rnn = construct_compressed(random_attention(d, seed=0))
    c = compressed_neuron_count(d)
    assert (rnn.n, rnn.m) == (c["n"], c["m"]) == (d * (d + 1) // 2 + d, d * (d + 1) // 2)
    lam = rnn.lam.detach()
    assert int((lam == 1).sum()) == d * (d + 1) // 2 and int((lam == 0).sum()) == d
    if d == 4:
        assert rnn.m == 10


def test_neuron_count_validates():
    with pytest.raises(ValueError, match="positive integer"):
        compressed_neuron_count(0)


def test_low_rank_values_with_keys_in_their_row_space():
    d, r = 6, 3
    layer = random_attention(d, seed=2, rank=r)
    keyed = LinearSelfAttention(W_V=layer.W_V, W_K=layer.W_V, W_Q=layer.W_Q)  # W_K = W_V: same rows
    rnn = construct_compressed(keyed)
    assert (rnn.n, rnn.m) == (r * (r + 1) // 2 + r, r * (r + 1) // 2)
    x = _inputs(d)
    with torch.no_grad():
        y = keyed(x)
        assert (rnn(x) - y).abs().max() / y.abs().max() < 1e-12


def test_keys_outside_the_values_row_space_are_refused():
    layer = random_attention(5, seed=3, rank=2)  # W_K of full rank: M is not symmetric
    with pytest.raises(ConstructionError, match="row space of W_V"):
        construct_compressed(layer)
    zero = LinearSelfAttention(W_V=torch.zeros(3, 3), W_K=torch.eye(3), W_Q=torch.eye(3))
    with pytest.raises(ConstructionError, match="W_V is zero"):
        construct_compressed(zero)
    with pytest.raises(TypeError, match="LinearSelfAttention"):
        construct_compressed("attention")


@pytest.mark.parametrize("d", [1, 2, 3])
def test_symbolic_proof(d):
    proof = symbolic_compressed(d, T=3)
    assert proof.is_zero and proof.nonzero_terms == 0
    assert proof.weights["D"].shape == (d, d * (d + 1) // 2)


def test_symbolic_proof_catches_a_broken_recipe():
    def drop_correction(W):
        W["W_out1"][0, 1] = 0  # diagonal neuron (0, 0) forgets -h_(0,1)

    assert symbolic_compressed(2, T=2, perturb=drop_correction).nonzero_terms > 0


@pytest.mark.parametrize("d", range(1, 7))
def test_lower_bound_is_the_count(d):
    assert column_rank(symmetric_product_matrix(d)) == d * (d + 1) // 2
    assert column_rank(product_matrix(d, d)) == d * d


def test_column_rank_sees_a_dependent_column():
    P = symmetric_product_matrix(3)
    P[:, -1] = P[:, 0] + P[:, 1]  # a planted dependence: one stored entry is redundant
    assert column_rank(P) == 5
