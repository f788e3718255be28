"""Eq. (2): the fast parallel-in-time form equals the reference loop, outputs and gradients."""

import pytest
import torch

from gated_attention import GatedRNN, gated_rnn_forward
from gated_attention.models.gated_rnn import (
    decay_matrix,
    lam_from_nu,
    nu_from_lam,
    scan_parallel,
    scan_reference,
)


def _grads(model, x, mode):
    loss = model(x, mode).pow(2).sum()
    return torch.autograd.grad(loss, list(model.parameters()))


@pytest.mark.parametrize("side", [False, True], ids=["output-gating", "side-gating"])
@pytest.mark.parametrize("T", [1, 2, 13, 32])
def test_parallel_equals_reference(side, T):
    model = GatedRNN(4, 12, 9, side=side, seed=T, dtype=torch.float64)
    x = torch.randn(3, T, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    y_fast, y_ref = model(x, "parallel"), model(x, "reference")
    assert torch.allclose(y_fast, y_ref, atol=1e-12, rtol=1e-10)
    for g_fast, g_ref in zip(
        _grads(model, x, "parallel"), _grads(model, x, "reference"), strict=True
    ):
        assert torch.allclose(g_fast, g_ref, atol=1e-10, rtol=1e-9)


def test_lam_exactly_zero_and_one():
    """lam can be set to exactly 0 and 1; the parallel form stays exact and gradients finite."""
    model = GatedRNN(3, 6, 5, seed=0, dtype=torch.float64)
    lam = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.5, 0.9], dtype=torch.float64)
    model.set_lam(lam)
    torch.testing.assert_close(model.lam, lam.to(model.lam.dtype), rtol=0, atol=1e-12)
    assert model.lam[0].item() == 0.0 and model.lam[1].item() == 1.0
    x = torch.randn(2, 7, 3, dtype=torch.float64)
    assert torch.allclose(model(x), model(x, "reference"), atol=1e-12)
    for g_fast, g_ref in zip(
        _grads(model, x, "parallel"), _grads(model, x, "reference"), strict=True
    ):
        assert torch.isfinite(g_fast).all()
        assert torch.allclose(g_fast, g_ref, atol=1e-10, rtol=1e-9)


def test_lam_one_accumulates_and_lam_zero_forgets():
    u = torch.arange(1.0, 6.0, dtype=torch.float64)[None, :, None].expand(1, 5, 2)
    h = scan_parallel(u, torch.tensor([1.0, 0.0], dtype=torch.float64))
    assert torch.equal(h[0, :, 0], torch.tensor([1.0, 3.0, 6.0, 10.0, 15.0], dtype=torch.float64))
    assert torch.equal(h[0, :, 1], u[0, :, 1])


def test_decay_matrix_entries():
    lam = torch.tensor([0.5], dtype=torch.float64)
    L = decay_matrix(lam, 3)[..., 0]
    expected = torch.tensor([[1, 0, 0], [0.5, 1, 0], [0.25, 0.5, 1]], dtype=torch.float64)
    assert torch.equal(L, expected)


def test_ensemble_dimension_equals_separate_networks():
    """Parameters with a leading ensemble dim E compute E independent networks."""
    models = [GatedRNN(3, 5, 4, seed=s, dtype=torch.float64) for s in range(3)]
    stacked = {k: torch.stack([m.params()[k] for m in models]) for k in models[0].params()}
    x = torch.randn(3, 2, 6, 3, dtype=torch.float64)  # (E, B, T, d)
    y = gated_rnn_forward(x, stacked)
    for e, m in enumerate(models):
        assert torch.allclose(y[e], m(x[e]), atol=1e-12)
    h_loop = scan_reference(torch.ones(3, 2, 6, 5, dtype=torch.float64), lam_from_nu(stacked["nu"]))
    h_fast = scan_parallel(torch.ones(3, 2, 6, 5, dtype=torch.float64), lam_from_nu(stacked["nu"]))
    assert torch.allclose(h_loop, h_fast, atol=1e-12)


def test_nu_lam_round_trip_and_range():
    lam = torch.tensor([0.0, 0.1, 0.5, 0.99, 1.0], dtype=torch.float64)
    assert torch.allclose(lam_from_nu(nu_from_lam(lam)), lam, atol=1e-12)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        nu_from_lam(torch.tensor([1.5]))


def test_same_seed_same_network():
    a, b = GatedRNN(4, 8, 8, seed=3), GatedRNN(4, 8, 8, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.W_in1, GatedRNN(4, 8, 8, seed=4).W_in1)


def test_bad_input_is_named():
    model = GatedRNN(4, 8, 8)
    with pytest.raises(ValueError, match=r"shape \(B, T, d=4\), got \(2, 5, 3\)"):
        model(torch.zeros(2, 5, 3))
    with pytest.raises(ValueError, match="unknown mode"):
        model(torch.zeros(2, 5, 4), "loop")
    with pytest.raises(ValueError, match="m .output-gating neurons"):
        GatedRNN(4, 8, 0)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        GatedRNN(4, 0, 3)
    with pytest.raises(ValueError, match=r"lam must have shape \(8,\)"):
        model.set_lam(torch.ones(3))
