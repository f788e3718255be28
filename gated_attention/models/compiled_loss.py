"""The loss of Eq. (2) and its gradients as one plain function, for the engine's "compiled" mode:
``fast_path.FusedLoss`` without autograd, written for ``torch.compile`` to fuse.

    scan            h_t = lam h_(t-1) + u_t (and its adjoint), unrolled over t
    loss_and_grads  (loss, g_W_in, g_nu, g_W_out, g_D) of packed weights (``fast_path``'s glossary)
    input_gating    u = (W_in1 x~) * (W_in2 x~) and the function giving its weight gradient
    small_bmm       a batched product with a tiny dimension, written as a sum
    column_sums     the input gating's gradient, one pass over the columns
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .gated_rnn import NU_MAX


def scan(u: torch.Tensor, lam: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    """h_t = lam * h_(t-1) + u_t along dim 2 of u (E, n, T, B), lam (E, n), Eq. (2)
    (``reverse``: h_t = lam * h_(t+1) + u_t, the adjoint); unrolled for ``torch.compile``."""
    steps = u.unbind(2)
    lam = lam[..., None]
    order = range(len(steps) - 1, -1, -1) if reverse else range(len(steps))
    h: list[torch.Tensor | None] = [None] * len(steps)
    prev = None
    for t in order:
        prev = steps[t] if prev is None else torch.addcmul(steps[t], prev, lam)
        h[t] = prev
    return torch.stack(h, 2)


def loss_and_grads(
    W_in: torch.Tensor,
    nu: torch.Tensor,
    W_out: torch.Tensor,
    D: torch.Tensor,
    X: torch.Tensor,
    Y: torch.Tensor,
    T: int,
    out_steps: torch.Tensor | None,
    scale: float = 1.0,
    gating: Callable | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss (E,), g_W_in, g_nu, g_W_out, g_D): ``FusedLoss``'s loss and the gradients of its
    sum, as one function of plain tensors. ``gating``: ``input_gating`` or a function of its
    signature (``lab.quadratic_gating``).

    ``FusedLoss``'s arithmetic (its docstring has the backward) but for the recurrence:
    h = ``scan(u, lam)`` and its adjoint g_u = ``scan(g_h, lam, reverse=True)``, so
    g_lam = sum_t g_u_t h_(t-1) and g_nu = -g_lam lam exp(nu); exact at lam = 0 and 1.
    """
    E, _, TB = X.shape
    B, n = TB // T, W_in.shape[1] // 2
    u, gating_grad = (gating or input_gating)(W_in, X)  # (E, n, T*B)
    e_nu = torch.exp(nu.clamp(-NU_MAX, NU_MAX))
    lam = torch.exp(-e_nu)  # = lam_from_nu(nu)
    h = scan(u.view(E, n, T, B), lam)  # (E, n, T, B)
    ho = h if out_steps is None else h[:, :, out_steps]  # (E, n, T', B)
    output = _output_by_tokens if E == 1 else _output_by_neurons
    loss, g_W_out, g_D, g_h = output(ho, W_out, D, Y, scale)
    if out_steps is not None:  # the loss reads only these steps: g_h is zero elsewhere
        g_h = torch.zeros_like(h).index_copy(2, out_steps, g_h)
    g_u = scan(g_h, lam, reverse=True)  # (E, n, T, B)
    g_lam = (g_u[:, :, 1:] * h[:, :, :-1]).sum(dim=(2, 3))
    inside = (nu >= -NU_MAX) & (nu <= NU_MAX)
    g_nu = torch.where(inside, -g_lam * lam * e_nu, torch.zeros_like(nu))
    return loss, gating_grad(g_u.reshape(E, n, TB)), g_nu, g_W_out, g_D


def _output_by_neurons(h: torch.Tensor, W_out, D, Y, scale: float) -> tuple:
    """Output gating, readout, loss and their backward: h (E, n, T', B) -> (loss, g_W_out, g_D,
    g_h)."""
    E, n, T_out, B = h.shape
    m, h = W_out.shape[1] // 2, h.reshape(E, n, -1)
    ab = torch.bmm(W_out, h)
    g = ab[:, :m] * ab[:, m:]
    r = torch.baddbmm(Y, D, g, beta=-1.0)  # y - Y
    loss = r.square().mean(dim=(1, 2)) * scale
    g_y = r * (2.0 * scale / (r.shape[1] * r.shape[2]))
    g_D = small_bmm(g_y, g.transpose(1, 2))  # (E, d_out, m): d_out rows, a sum over T'*B
    g_g = small_bmm(D.transpose(1, 2), g_y)  # (E, m, T'*B): a sum over d_out, fused below
    g_ab = torch.cat([g_g * ab[:, m:], g_g * ab[:, :m]], dim=1)
    g_h = torch.bmm(W_out.transpose(1, 2), g_ab).view(E, n, T_out, B)
    return loss, torch.bmm(g_ab, h.transpose(1, 2)), g_D, g_h


def _output_by_tokens(h: torch.Tensor, W_out, D, Y, scale: float) -> tuple:
    """``_output_by_neurons`` token-major (faster on a CPU for one member); equal up to rounding."""
    E, n, T_out, B = h.shape
    m, hT = W_out.shape[1] // 2, h.permute(0, 2, 3, 1).reshape(E, -1, n)
    ab = torch.bmm(hT, W_out.transpose(1, 2))  # (E, T'*B, 2m)
    g = ab[..., :m] * ab[..., m:]
    r = torch.baddbmm(Y.transpose(1, 2), g, D.transpose(1, 2), beta=-1.0)  # (E, T'*B, d_out)
    loss = r.square().mean(dim=(1, 2)) * scale
    g_y = r * (2.0 * scale / (r.shape[1] * r.shape[2]))
    g_D = column_sums([g.transpose(1, 2)], g_y.transpose(1, 2))  # (E, d_out, m): over tokens
    g_g = small_bmm(g_y, D)  # (E, T'*B, m): a sum over d_out
    g_ab = torch.cat([g_g * ab[..., m:], g_g * ab[..., :m]], dim=2)
    g_h = torch.bmm(g_ab, W_out).view(E, T_out, B, n).permute(0, 3, 1, 2)  # (E, n, T', B)
    return loss, torch.bmm(g_ab.transpose(1, 2), hT), g_D, g_h


def input_gating(W_in: torch.Tensor, X: torch.Tensor) -> tuple[torch.Tensor, Callable]:
    """(u, grad): Eq. (2)'s input gating u = p * q, p = W_in1 X, q = W_in2 X (E, n, T*B) of
    W_in (E, 2n, d+1) and X (E, d+1, T*B), and grad(g_u) -> g_W_in = [(g_u * q) X^T;
    (g_u * p) X^T]. The backward recomputes p and q from X rather than keep [p; q]."""
    n = W_in.shape[1] // 2
    W1, W2 = W_in[:, :n], W_in[:, n:]

    def grad(g_u: torch.Tensor) -> torch.Tensor:
        E, K = X.shape[0], X.shape[1]  # (g_u * q) X^T and (g_u * p) X^T, (E, 2 * K, n)
        sums = column_sums([g_u * small_bmm(W2, X), g_u * small_bmm(W1, X)], X)
        return sums.view(E, 2, K, n).transpose(2, 3).reshape(E, 2 * n, K)  # (E, 2n, d+1)

    return small_bmm(W1, X) * small_bmm(W2, X), grad


def small_bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b (a (E, M, K), b (E, K, N)) as a broadcast product summed over K, for
    ``torch.compile`` to fuse where K or N is tiny (d + 1); ``torch.bmm`` up to summation order."""
    if a.shape[2] <= b.shape[2]:  # K the smaller: sum over dim 2 of (E, M, K, N)
        return (a[:, :, :, None] * b[:, None, :, :]).sum(2)
    return (a[:, :, None, :] * b.transpose(1, 2)[:, None, :, :]).sum(3)  # (E, M, N, K)


def column_sums(a: list[torch.Tensor], b: torch.Tensor) -> torch.Tensor:
    """Each a_i b^T (a_i (E, M, N), b (E, K, N)) as K sums over the N columns, one pass where K
    is tiny (d + 1): (E, len(a) * K, M), row i * K + k = a_i . b[k]; bit for bit ``small_bmm``."""
    return torch.stack([(x * b[:, None, k]).sum(-1) for x in a for k in range(b.shape[1])], dim=1)
