"""Input gating on quadratic features (tools/quadratic_gating.py, bench way (f)): the same loss
and gradients as the engine's compiled step, and a step of it trains as the engine's does."""

import pytest
import torch

from gated_attention.models import compiled_loss
from gated_attention.models.fast_path import pack_params
from lab import bench_ways
from lab import quadratic_gating as qg


def _packed(E=2, n=6, d=3, T=5, B=4, seed=0):
    params, X, Y = bench_ways._setup(E, n, d, T, B, seed)
    P = {k: v.double() for k, v in pack_params(params).items()}
    P["nu"] = P["nu"] + torch.linspace(-2, 2, P["nu"].numel()).view_as(P["nu"]).double()
    return P, X.double(), Y.double(), T


def test_the_forms_give_the_gating_of_the_two_maps():
    """u = M Z equals (W1 x~)(W2 x~) neuron by neuron."""
    P, X, _, _ = _packed()
    n = P["W_in"].shape[1] // 2
    pq = torch.bmm(P["W_in"], X)
    u = torch.bmm(qg.forms(P["W_in"]), qg.features(X))
    torch.testing.assert_close(u, pq[:, :n] * pq[:, n:], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("last_only", [False, True])
def test_loss_and_gradients_equal_the_engines(last_only):
    P, X, Y, T = _packed()
    out_steps = torch.tensor([T - 1]) if last_only else None
    if last_only:
        Y = Y.view(*Y.shape[:-1], T, -1)[..., -1, :]
    args = (P["W_in"], P["nu"], P["W_out"], P["D"], X, Y, T, out_steps, 0.5)
    for a, b in zip(compiled_loss.loss_and_grads(*args), qg.loss_and_grads(*args), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-11, atol=1e-13)


def test_the_gradient_of_the_forms_is_autograds():
    P, X, _, _ = _packed()
    W = P["W_in"].clone().requires_grad_(True)
    g_M = torch.randn(qg.forms(W).shape, dtype=torch.float64)
    (qg.forms(W) * g_M).sum().backward()
    torch.testing.assert_close(qg.form_grads(g_M, P["W_in"]), W.grad, rtol=1e-12, atol=1e-13)


def test_the_bench_row_runs_the_engines_compiled_step_with_these_gradients():
    """Row (f): the engine's CompiledStep, its compiled function swapped; three steps of it
    move the weights as three steps of row "compiled" do (float32, the same batch)."""
    from gated_attention.engine.steps import CompiledStep

    params, X, Y = bench_ways._setup(1, 5, 3, 4, 3, seed=0)
    moved = {}
    for way in ("compiled", "quadratic"):
        one = bench_ways._step(way, params, X, Y, 4)
        for _ in range(3):
            one()
        assert type(one.step) is CompiledStep
        moved[way] = {k: v.detach().clone() for k, v in one.step.P.items()}
    start = pack_params(params)
    for k, w in moved["compiled"].items():
        torch.testing.assert_close(moved["quadratic"][k], w, rtol=1e-5, atol=1e-6)
        assert not torch.equal(w, start[k].float())  # it did train
