"""App. A: each construction computes exactly what attention computes; perturbed, it fails."""

import pytest
import torch

from gated_attention import (
    VARIANTS,
    ConstructionError,
    LinearSelfAttention,
    attention_parameter_count,
    construct_rnn,
    neuron_count,
    parameter_count,
    random_attention,
)


def _max_error(rnn, att, d, seed=0, T=10):
    x = torch.randn(5, T, d, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    y = att(x)
    err_fast = (rnn(x, "parallel") - y).abs().max().item()
    err_loop = (rnn(x, "reference") - y).abs().max().item()
    return max(err_fast, err_loop)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("d", range(1, 9))
def test_construction_equals_attention(variant, d):
    att = random_attention(d, seed=100 + d)
    rnn = construct_rnn(att, variant)
    assert _max_error(rnn, att, d) < 1e-10


@pytest.mark.parametrize("variant", VARIANTS)
def test_perturbed_construction_fails(variant):
    """The twin: change one weight or one lam and the equivalence breaks."""
    d = 4
    att = random_attention(d, seed=1)
    for perturb in ("weight", "lam"):
        rnn = construct_rnn(att, variant)
        with torch.no_grad():
            if perturb == "weight":
                rnn.W_in2[0, 0] += 0.1
            else:
                lam = rnn.lam.clone().to(torch.float64)
                lam[-1] = 0.5  # a query neuron (or, for side gating, a key-value neuron)
                rnn.set_lam(lam)
        assert _max_error(rnn, att, d) > 1e-3, perturb


@pytest.mark.parametrize("variant", VARIANTS)
def test_neuron_counts_match_the_built_network(variant):
    for d in (1, 4, 6):
        rnn = construct_rnn(random_attention(d, seed=d), variant)
        assert (rnn.n, rnn.m) == tuple(neuron_count(variant, d).values())
        assert sum(p.numel() for p in rnn.parameters()) == parameter_count(variant, d)


def test_paper_counts():
    assert neuron_count("full", 4) == {"n": 20, "m": 16}
    assert neuron_count("symmetric", 4)["n"] == 14  # App. A.3, Fig. 2
    assert neuron_count("low_rank", 12, r_V=6, r_KQ=6)["n"] == 42  # App. A.4, Fig. 3B
    assert neuron_count("low_rank", 6, r_V=3, r_KQ=3)["n"] == 12  # Sec. 5, one GD step
    assert neuron_count("side", 4) == {"n": 16, "m": 0}
    assert attention_parameter_count(4) == 48
    # O(d^4) for input-output gating, O(d^3) for side gating
    assert parameter_count("full", 20) / parameter_count("full", 10) > 14
    assert parameter_count("side", 20) / parameter_count("side", 10) < 9


def test_low_rank_uses_the_ranks():
    att = random_attention(12, seed=0, rank=6)
    rnn = construct_rnn(att, "low_rank")
    assert rnn.n == 42 and rnn.m == 36
    assert _max_error(rnn, att, 12, T=6) < 1e-10


def test_symmetric_stores_half_the_key_values():
    rnn = construct_rnn(random_attention(4, seed=0), "symmetric")
    lam = rnn.lam
    assert int((lam == 1).sum()) == 10 and int((lam == 0).sum()) == 4


def test_symmetric_rejects_singular_W_V():
    att = random_attention(4, seed=0, rank=3)
    with pytest.raises(ConstructionError, match="invertible W_V.*rank 3"):
        construct_rnn(att, "symmetric")
    # the other variants still work on the same layer
    assert _max_error(construct_rnn(att, "low_rank"), att, 4) < 1e-10


def test_symmetric_rejects_non_square_W_V():
    g = torch.Generator().manual_seed(0)
    att = LinearSelfAttention(
        W_V=torch.randn(2, 3, generator=g, dtype=torch.float64),
        W_K=torch.randn(4, 3, generator=g, dtype=torch.float64),
        W_Q=torch.randn(4, 3, generator=g, dtype=torch.float64),
    )
    with pytest.raises(ConstructionError, match="square"):
        construct_rnn(att, "symmetric")
    for variant in ("full", "low_rank", "side"):
        assert _max_error(construct_rnn(att, variant), att, 3) < 1e-10


def test_zero_attention_is_named():
    z = torch.zeros(3, 3, dtype=torch.float64)
    with pytest.raises(ConstructionError, match="identically zero"):
        construct_rnn(LinearSelfAttention(W_V=z, W_K=z, W_Q=z), "low_rank")


def test_unknown_variant_and_type():
    att = random_attention(2, seed=0)
    with pytest.raises(ValueError, match="unknown variant 'diagonal'"):
        construct_rnn(att, "diagonal")
    with pytest.raises(ValueError, match="unknown variant"):
        neuron_count("diagonal", 3)
    with pytest.raises(TypeError, match="LinearSelfAttention"):
        construct_rnn(torch.eye(2), "full")
