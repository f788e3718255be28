"""The recurrence as an in-place scan (tools/inplace_scan.py, bench way (g)): the same loss and
gradients as the engine's fused step, exact at lam = 0 and 1, and a step of it trains as the
engine's does."""

import pytest
import torch

from gated_attention.models import fast_path
from gated_attention.models.fast_path import pack_params
from gated_attention.models.gated_rnn import NU_MAX
from lab import bench_ways
from lab import inplace_scan as ips


def _packed(E=2, n=6, d=3, T=5, B=4, seed=0):
    params, X, Y = bench_ways._setup(E, n, d, T, B, seed)
    P = {k: v.double() for k, v in pack_params(params).items()}
    P["nu"] = P["nu"] + torch.linspace(-2, 2, P["nu"].numel()).view_as(P["nu"]).double()
    return P, X.double(), Y.double(), T


def _both(P, X, Y, T, out_steps, scale):
    """(loss, grads) of FusedLoss and of InPlaceScanLoss for the same inputs."""
    out = []
    for loss_fn in (fast_path.fused_loss, ips.inplace_loss):
        Q = {k: v.clone().requires_grad_(True) for k, v in P.items()}
        loss = loss_fn(X, Q, Y, T, out_steps, scale)
        (loss * torch.arange(1.0, 1.0 + loss.numel(), dtype=loss.dtype)).sum().backward()
        out.append((loss.detach(), {k: q.grad for k, q in Q.items()}))
    return out


def test_the_in_place_scan_is_the_recurrence():
    u = torch.randn(2, 3, 6, 4, dtype=torch.float64)
    lam = torch.rand(2, 3, dtype=torch.float64)
    h, prev = ips.scan_(u.clone(), lam), torch.zeros(2, 3, 4, dtype=torch.float64)
    for t in range(6):
        prev = lam[..., None] * prev + u[:, :, t]
        torch.testing.assert_close(h[:, :, t], prev, rtol=1e-13, atol=1e-14)
    back, nxt = ips.scan_(u.clone(), lam, reverse=True), torch.zeros_like(prev)
    for t in range(5, -1, -1):
        nxt = lam[..., None] * nxt + u[:, :, t]
        torch.testing.assert_close(back[:, :, t], nxt, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("last_only", [False, True])
def test_loss_and_gradients_equal_the_fused_steps(last_only):
    P, X, Y, T = _packed()
    out_steps = torch.tensor([1, T - 1]) if last_only else None
    if last_only:
        Y = Y.view(*Y.shape[:-1], T, -1)[..., [1, T - 1], :].reshape(*Y.shape[:-1], -1)
    (la, ga), (lb, gb) = _both(P, X, Y, T, out_steps, 0.5)
    torch.testing.assert_close(lb, la, rtol=1e-11, atol=1e-13)
    for k in ga:
        torch.testing.assert_close(gb[k], ga[k], rtol=1e-10, atol=1e-12)


def test_exact_at_lam_zero_and_one_with_the_fused_steps_gradients():
    """nu beyond NU_MAX on both sides: lam = 0 (no memory) and lam = 1 (a running sum), and
    g_nu zero there, as the decay matrix has them."""
    P, X, Y, T = _packed()
    P["nu"][0, :2] = torch.tensor([NU_MAX + 1.0, -NU_MAX - 1.0], dtype=torch.float64)
    (la, ga), (lb, gb) = _both(P, X, Y, T, None, 1.0)
    torch.testing.assert_close(lb, la, rtol=1e-11, atol=1e-13)
    assert torch.equal(gb["nu"][0, :2], torch.zeros(2, dtype=torch.float64))
    for k in ga:
        torch.testing.assert_close(gb[k], ga[k], rtol=1e-10, atol=1e-12)


def test_the_bench_row_runs_the_engines_fused_step_with_this_loss():
    """Row (g): the engine's FusedStep with this loss; three steps of it move the weights as
    three steps of row "engine" do (float32, the same batch)."""
    from gated_attention.engine.steps import FusedStep

    params, X, Y = bench_ways._setup(1, 5, 3, 4, 3, seed=0)
    moved, start = {}, None
    for way in ("engine", "inplace"):
        one = bench_ways._step(way, params, X, Y, 4)
        assert type(one.step) is FusedStep
        weights = [p for g in one.step.opt.param_groups for p in g["params"]]
        start = [w.detach().clone() for w in weights]
        for _ in range(3):
            one()
        moved[way] = [w.detach().clone() for w in weights]
    for a, b, s in zip(moved["engine"], moved["inplace"], start, strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
        assert not torch.equal(a, s)  # it did train
