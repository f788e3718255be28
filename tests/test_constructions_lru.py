"""Table 3 / App. B.1: the 2-layer LRU and the 1-layer LRU In+Out implement linear
self-attention in the limit eps -> 0, with relative error O(eps^2); perturbed twins do not."""

import pytest
import torch

from gated_attention.constructions.linearised import error_slope
from gated_attention.constructions.lru import (
    SLOPE,
    construction_error,
    lru_construction,
    lru_inout_construction,
    pair_units,
)
from gated_attention.models.attention import LinearSelfAttention, random_attention
from gated_attention.models.lru import LRU, LRU_IN_OUT, gamma_from_nu

#: eps where the eps^2 term dominates: float64 rounding (~1e-16 / eps) only takes over below 1e-5
EPS = [1e-1, 3e-2, 1e-2, 3e-3, 1e-3]
CASES = {"lru": (LRU, lru_construction), "lru_inout": (LRU_IN_OUT, lru_inout_construction)}


def rectangular(seed=3):
    """d = 3 inputs, d_k = 2 keys and queries, d_v = 4 values: no layout may assume d_v = d_k."""
    g = torch.Generator().manual_seed(seed)
    W_V, W_K, W_Q = (
        torch.randn(r, 3, generator=g, dtype=torch.float64) / 3**0.5 for r in (4, 2, 2)
    )
    return LinearSelfAttention(W_V=W_V, W_K=W_K, W_Q=W_Q)


ATTENTIONS = {"d3": lambda: random_attention(3, seed=1), "rect": rectangular}


def errors(family, build, attention, perturb=None, **kw):
    out = []
    for eps in EPS:
        P = build(attention, eps, **kw)
        if perturb is not None:
            perturb(P, attention)
        out.append(construction_error(family, P, attention, T=16, batch=32, seed=0))
    return out


@pytest.mark.parametrize("att", ATTENTIONS)
@pytest.mark.parametrize("case", CASES)
def test_error_falls_as_eps_squared(case, att):
    family, build = CASES[case]
    err = errors(family, build, ATTENTIONS[att]())
    assert all(a > b for a, b in zip(err, err[1:], strict=False))
    assert abs(error_slope(EPS, err) - SLOPE) < 0.3
    assert err[-1] < 1e-4


@pytest.mark.parametrize("case", CASES)
def test_reference_loop_agrees_on_the_construction(case):
    family, build = CASES[case]
    attention = random_attention(2, seed=2)
    P = build(attention, 1e-2, width=None)
    x = torch.randn(1, 3, 10, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    y = family.forward(x, P)
    assert (y - family.reference(x, P)).abs().max() < 1e-9 * y.abs().max()
    wider = build(attention, 1e-2, width=P["W_emb"].shape[1] + 3)  # spare units stay silent
    assert torch.allclose(family.forward(x, wider), y, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="width"):
        build(attention, 1e-2, width=P["W_emb"].shape[1] - 1)


def n_pairs(attention):
    return attention.d_v * attention.d_k


def drop_inverse_gamma(P, attention):
    """B of the lam -> 1 neurons without its 1/gamma: the memory hears 2.9e-9 of its input."""
    P["l2_B_re"] *= gamma_from_nu(P["l2_nu"])[..., None]


def flip_readout_partner(P, attention):
    """The minus partner added instead of subtracted: the constant a/2 of the GLU survives."""
    _, minus = pair_units(attention.d + 2 * n_pairs(attention), n_pairs(attention))
    P["W_out"][0, :, minus] *= -1


def flip_input_gate_partner(P, attention):
    """The minus partner's gate sign flipped: both partners equal, the product cancels."""
    _, minus = pair_units(0, n_pairs(attention))
    P["l1_W_4"][0, minus] *= -1


TWINS = {
    "lru-no-1/gamma": ("lru", drop_inverse_gamma, {}),
    "lru-readout-sign": ("lru", flip_readout_partner, {}),
    "lru-forgets": ("lru", None, {"nu_one": -3.0}),  # |lam| = 0.95 instead of -> 1
    "inout-pair-sign": ("lru_inout", flip_input_gate_partner, {}),
    "inout-rotates": ("lru_inout", None, {"theta_one": -3.0}),  # phase 0.05 rad per step
}


@pytest.mark.parametrize("twin", TWINS)
def test_perturbed_twin_does_not_converge(twin):
    case, perturb, kw = TWINS[twin]
    family, build = CASES[case]
    err = errors(family, build, random_attention(3, seed=1), perturb, **kw)
    assert min(err) > 1e-2
