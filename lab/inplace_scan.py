"""The recurrence as an in-place scan over t: a way to the floor, a row of ``make bench``.

Mode "fast" (``fast_path.FusedLoss``) runs the recurrence h_t = lam h_(t-1) + u_t of Eq. (2)
as products with the decay matrix L[t, s] = lam^(t-s) (T x T per neuron): the forward
h = L u, and in the backward g_L = g_h u^T and g_u = L^T g_h, then g_nu from g_L and L. Here
the same step runs the recurrence itself, in place, eagerly (no ``torch.compile``):

    forward    u is overwritten by h: h_t += lam * h_(t-1) for t = 1 .. T-1, one ``addcmul_``
               per step on an (E, n, B) slice of the neuron-major (E, n, T, B) activations
    backward   g_u = the adjoint scan of g_h (zero at steps the loss does not read), in
               place: g_u_t += lam * g_u_(t+1) for t = T-2 .. 0
               g_lam = sum_t g_u_t . h_(t-1) (one dot product per neuron, no temporary),
               g_nu = -g_lam lam exp(nu) (zero where nu is clamped, as in ``FusedLoss``)

so no (E, n, T, T) matrix is built or multiplied; every other product is ``FusedLoss``'s (the
output gating the same code, ``fast_path.output_forward`` and ``output_backward``). The scan is
exact at lam = 0 and lam = 1 as the decay matrix is. ``InPlaceScanLoss`` is one autograd node
with the signature of ``FusedLoss``; ``bench_ways`` runs it through the engine's own
``FusedStep`` (row "(g)"). ``tests/test_inplace_scan.py`` checks it against ``FusedLoss`` in
float64.

Measured on a 2-core AMD EPYC against the engine's fast step in one process, in turns (20
rounds of 10 steps, min / first quartile): one student of n = 100 3.89 / 4.15 ms against 4.11 /
4.54 (1.05-1.09x), the 16 x n = 28 ensemble 9.46 / 10.61 against 11.01 / 12.35 (1.16x); mode
"compiled", which scans over t too, took 2.70 / 2.85 and 5.10 / 5.34 there. Mode "fast" keeps
its decay matrix: the scan would move the recorded quick runs' numbers by rounding, and on a
GPU it adds two launches per time step to a step whose launches are its cost.

Glossary (code name -> meaning):
    h4     h as (E, n, T, B): u before the forward scan, h after it
    lam    lam = exp(-exp(nu)), (E, n)
"""

from __future__ import annotations

import torch

from gated_attention.models.fast_path import output_backward, output_forward
from gated_attention.models.gated_rnn import NU_MAX

__all__ = ["scan_", "InPlaceScanLoss", "inplace_loss"]


def scan_(v: torch.Tensor, lam: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    """In place along dim 2 of v (E, n, T, B): v_t += lam * v_(t-1) for t = 1 .. T-1
    (``reverse``: v_t += lam * v_(t+1) for t = T-2 .. 0), lam (E, n). Returns v."""
    lam = lam[..., None]
    T = v.shape[2]
    for t in range(T - 2, -1, -1) if reverse else range(1, T):
        v[:, :, t].addcmul_(v[:, :, t + 1] if reverse else v[:, :, t - 1], lam)
    return v


class InPlaceScanLoss(torch.autograd.Function):
    """``fast_path.FusedLoss`` with the recurrence as in-place scans (module docstring):
    forward(W_in, nu, W_out, D, X, Y, T, out_steps, scale) -> loss (E,), shapes as there."""

    @staticmethod
    def forward(ctx, W_in, nu, W_out, D, X, Y, T, out_steps, scale):
        E, _, TB = X.shape
        B, n = TB // T, W_in.shape[1] // 2
        pq = torch.bmm(W_in, X)  # (E, 2n, T*B)
        h = pq[:, :n] * pq[:, n:]  # u, then h in place
        e_nu = torch.exp(nu.clamp(-NU_MAX, NU_MAX))
        lam = torch.exp(-e_nu)  # = lam_from_nu(nu)
        scan_(h.view(E, n, T, B), lam)
        ho = h if out_steps is None else h.view(E, n, T, B)[:, :, out_steps].reshape(E, n, -1)
        ab, g, r, loss = output_forward(ho, W_out, D, Y, scale)
        ctx.save_for_backward(W_in, nu, W_out, D, X, pq, h, ho, e_nu, lam, ab, g, r)
        ctx.T, ctx.out_steps, ctx.scale = T, out_steps, scale
        return loss

    @staticmethod
    def backward(ctx, g_loss):
        W_in, nu, W_out, D, X, pq, h, ho, e_nu, lam, ab, g, r = ctx.saved_tensors
        T, out_steps = ctx.T, ctx.out_steps
        E, n, TB = h.shape
        B = TB // T
        g_D, g_W_out, g_ho = output_backward(g_loss, ctx.scale, r, D, W_out, ab, g, ho)
        if out_steps is None:
            g_u = g_ho
        else:  # zero at the steps the loss does not read
            g_u = h.new_zeros(E, n, T, B)
            g_u[:, :, out_steps] = g_ho.view(E, n, -1, B)
            g_u = g_u.view(E, n, TB)
        scan_(g_u.view(E, n, T, B), lam, reverse=True)  # g_u = dL/du_t
        # g_lam = sum_t g_u_t h_(t-1): the columns from step 1 on against those up to T-1
        g_lam = torch.linalg.vecdot(g_u[:, :, B:], h[:, :, : TB - B])  # (E, n)
        g_nu = -g_lam * lam * e_nu
        g_nu = torch.where(nu.abs() <= NU_MAX, g_nu, 0.0)  # zero where nu is clamped (or NaN)
        g_pq = torch.empty_like(pq)
        torch.mul(g_u, pq[:, n:], out=g_pq[:, :n])
        torch.mul(g_u, pq[:, :n], out=g_pq[:, n:])
        g_W_in = torch.bmm(X, g_pq.transpose(1, 2)).transpose(1, 2)  # as FusedLoss computes it
        return g_W_in, g_nu, g_W_out, g_D, None, None, None, None, None


def inplace_loss(X, packed, Y, T, out_steps, scale: float = 1.0) -> torch.Tensor:
    """``fast_path.fused_loss`` with ``InPlaceScanLoss``: the (E,) losses of Eq. (2) with
    output gating, X (E, d+1, T*B) and Y (E, d_out, T'*B) neuron-major, packed weights."""
    return InPlaceScanLoss.apply(
        packed["W_in"], packed["nu"], packed["W_out"], packed["D"], X, Y, T, out_steps, scale
    )
