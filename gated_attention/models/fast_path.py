"""The fused forward of Eq. (2) that the training engine runs (arXiv:2309.01775v2, Sec. 2).

``gated_rnn.gated_rnn_forward`` arranged for speed: neuron-major activations, column t*B + b;
packed weights, so each gating is one GEMM (``GatedProduct``); the scan as one GEMM with L; the
output only at the steps the loss reads. ``fused_loss``: Eq. (2) and its squared error as one
autograd node with a hand-written backward (``FusedLoss``).

Glossary (code name -> paper symbol -> shape):
    X          x~_t = [x_t; 1] for every (t, b), neuron-major          (E, d+1, T*B)
    W_in       [W_in1; W_in2]                                          (E, 2n, d+1)
    u          g_in(x~_t) = (W_in1 x~_t) * (W_in2 x~_t)                (E, n, T, B)
    L          L[t, s] = lam^(t-s) for s <= t                          (E, n, T, T)
    h          h_t                                                     (E, n, T'*B)
    W_out      [W_out1; W_out2]                                        (E, 2m, n)
    W_side     side gate of App. A.2 (instead of W_out)                (E, n, d+1)
    D          readout D                                               (E, d_out, m or n)
"""

from __future__ import annotations

import functools

import torch

from .gated_rnn import NU_MAX


class GatedProduct(torch.autograd.Function):
    """(W_1 X) * (W_2 X) for W = [W_1; W_2] (E, 2k, K) and X (E, K, R) -> (E, k, R), one GEMM."""

    @staticmethod
    def forward(ctx, W: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        ab = torch.bmm(W, X)  # (E, 2k, R)
        k = W.shape[1] // 2
        ctx.save_for_backward(W, X)
        ctx.ab = ab
        return ab[:, :k] * ab[:, k:]

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        W, X = ctx.saved_tensors
        g_ab = halves_grad(grad, ctx.ab)
        g_W = torch.bmm(g_ab, X.transpose(1, 2)) if ctx.needs_input_grad[0] else None
        g_X = torch.bmm(W.transpose(1, 2), g_ab) if ctx.needs_input_grad[1] else None
        return g_W, g_X


def halves_grad(g: torch.Tensor, ab: torch.Tensor) -> torch.Tensor:
    """The gradient [g * b; g * a] of ab = [a; b] (E, 2k, R) under a * b, from g (E, k, R)."""
    k = ab.shape[1] // 2
    g_ab = torch.empty_like(ab)
    torch.mul(g, ab[:, k:], out=g_ab[:, :k])
    torch.mul(g, ab[:, :k], out=g_ab[:, k:])
    return g_ab


def decay_matrix_from_nu(nu: torch.Tensor, T: int) -> tuple[torch.Tensor, torch.Tensor]:
    """L[..., t, s] = lam^(t-s) for s <= t, else 0: nu (*E, n) -> L (*E, n, T, T) and exp(nu)
    (*E, n), clamped as in ``lam_from_nu``. The fast twin of ``gated_rnn.decay_matrix``, also
    exact at lam = 0 and 1 with finite gradients."""
    e_nu = torch.exp(nu.clamp(-NU_MAX, NU_MAX))
    log_lam = -e_nu
    lam = torch.exp(log_lam)  # = lam_from_nu(nu)
    log_lam = torch.where(lam == 1.0, 0.0, log_lam)  # lam == 1: every power exactly 1
    lag, tril = _lags(T, nu.dtype, nu.device)
    return torch.exp(lag * log_lam[..., None, None]) * tril, e_nu


def pack_params(params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Eq. (2) parameters (W_in1, W_in2, nu, W_out1, W_out2 or W_side, D) -> packed ones."""
    packed = {"W_in": torch.cat([params["W_in1"], params["W_in2"]], dim=-2), "nu": params["nu"]}
    if "W_side" in params:
        packed["W_side"] = params["W_side"]
    else:
        packed["W_out"] = torch.cat([params["W_out1"], params["W_out2"]], dim=-2)
    packed["D"] = params["D"]
    return packed


def unpack_params(packed: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inverse of ``pack_params`` (views, no copies)."""
    W_in1, W_in2 = packed["W_in"].chunk(2, dim=-2)
    params = {"W_in1": W_in1, "W_in2": W_in2, "nu": packed["nu"]}
    if "W_side" in packed:
        params["W_side"] = packed["W_side"]
    else:
        params["W_out1"], params["W_out2"] = packed["W_out"].chunk(2, dim=-2)
    params["D"] = packed["D"]
    return params


def inputs_neuron_major(x: torch.Tensor) -> torch.Tensor:
    """x (..., E, B, T, d) -> X (..., E, d+1, T*B): x~ = [x; 1], time-major columns."""
    *lead, B, T, d = x.shape
    x_tilde = torch.cat([x, x.new_ones(*lead, B, T, 1)], dim=-1)  # (..., B, T, d+1)
    return x_tilde.permute(*range(len(lead)), -1, -2, -3).reshape(*lead, d + 1, T * B)


def targets_neuron_major(y: torch.Tensor, out_steps: torch.Tensor | None) -> torch.Tensor:
    """y (..., E, B, T, d_out) -> (..., E, d_out, T'*B) at the steps ``out_steps`` (None: all)."""
    if out_steps is not None:
        y = y[..., out_steps, :]
    *lead, B, T_out, d_out = y.shape
    return y.permute(*range(len(lead)), -1, -2, -3).reshape(*lead, d_out, T_out * B)


def forward_packed(
    X: torch.Tensor, packed: dict[str, torch.Tensor], T: int, out_steps: torch.Tensor | None
) -> torch.Tensor:
    """Eq. (2) on neuron-major inputs X (E, d+1, T*B) -> y (E, d_out, T'*B), packed weights."""
    E, d1, TB = X.shape
    B = TB // T
    n = packed["W_in"].shape[-2] // 2
    u = GatedProduct.apply(packed["W_in"], X).view(E, n, T, B)  # g_in(x~_t)
    L, _ = decay_matrix_from_nu(packed["nu"], T)  # (E, n, T, T)
    if out_steps is not None:
        L = L[:, :, out_steps]  # only the rows of the steps the loss reads
    h = torch.matmul(L, u)  # (E, n, T', B): h_t = sum_{s<=t} lam^(t-s) u_s
    T_out = h.shape[2]
    h = h.view(E, n, T_out * B)
    if "W_side" in packed:  # App. A.2: y = D ((W_side x~_t) * h_t)
        Xs = X if out_steps is None else X.view(E, d1, T, B)[:, :, out_steps].reshape(E, d1, -1)
        g = torch.bmm(packed["W_side"], Xs) * h
    else:
        g = GatedProduct.apply(packed["W_out"], h)  # g_out(h_t): (E, m, T'*B)
    return torch.bmm(packed["D"], g)  # (E, d_out, T'*B)


def gated_rnn_fast(
    x: torch.Tensor, params: dict[str, torch.Tensor], out_steps: torch.Tensor | None = None
) -> torch.Tensor:
    """Eq. (2), fast: x (E, B, T, d) -> y (E, B, T', d_out), T' = len(out_steps) or T; the
    parameters of ``gated_rnn_forward`` (leading dim E)."""
    E, B, T, d = x.shape
    y = forward_packed(inputs_neuron_major(x), pack_params(params), T, out_steps)
    return y.view(E, -1, y.shape[-1] // B, B).permute(0, 3, 2, 1)  # (E, B, T', d_out)


@functools.lru_cache(maxsize=16)
def _lags(T: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """lag[t, s] = max(t - s, 0) and the lower-triangular 0/1 mask (s <= t), both (T, T)."""
    t = torch.arange(T, device=device)
    lag = t[:, None] - t[None, :]
    return lag.clamp(min=0).to(dtype), (lag >= 0).to(dtype)


@functools.lru_cache(maxsize=16)
def _negative_lags(T: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """-lag (T, T) of ``_lags``: the backward's sign in a constant (exact, bit for bit)."""
    return -_lags(T, dtype, device)[0]


class FusedLoss(torch.autograd.Function):
    """Eq. (2) with output gating and its loss, one autograd node: the engine's training step.

    forward(W_in, nu, W_out, D, X, Y, T, out_steps, scale) -> loss (E,), where
    loss_e = scale * mean over (d_out, T'*B) of (y_e - Y_e)^2 and y = ``forward_packed(X, ...)``.
    Shapes as in the module docstring; Y (E, d_out, T'*B) neuron-major.

    Backward, by hand (r = y - Y, a/b the two halves of W_out h, p/q those of W_in X):
        g_y = 2 scale / (d_out T' B) * r          g_D = g_y g^T       g_g = D^T g_y
        g_[a; b] = [g_g * b; g_g * a]             g_W_out = g_[a; b] h^T
        g_h = W_out^T g_[a; b]                    g_L = g_h u^T       g_u = L^T g_h
        g_[p; q] = [g_u * q; g_u * p]             g_W_in = g_[p; q] X^T = (X g_[p; q]^T)^T
        L[t, s] = exp((t - s) log lam), log lam = -exp(nu), so
        g_nu = -exp(nu) sum_{t >= s} g_L[t, s] (t - s) L[t, s]   (zero where |nu| > NU_MAX)
    ``tests/test_training.py`` checks it against autograd through ``forward_packed`` (float64).
    """

    @staticmethod
    def forward(ctx, W_in, nu, W_out, D, X, Y, T, out_steps, scale):
        E, _, TB = X.shape
        B, n = TB // T, W_in.shape[1] // 2
        pq = torch.bmm(W_in, X)  # (E, 2n, T*B)
        u = pq[:, :n] * pq[:, n:]  # g_in(x~_t)
        L, e_nu = decay_matrix_from_nu(nu, T)  # (E, n, T, T): lam^(t-s), exact at 0 and 1
        Lo = L if out_steps is None else L[:, :, out_steps]
        h = torch.matmul(Lo, u.view(E, n, T, B)).view(E, n, -1)  # (E, n, T'*B)
        ab, g, r, loss = output_forward(h, W_out, D, Y, scale)
        ctx.save_for_backward(W_in, nu, W_out, D, X, pq, u, e_nu, L, h, ab, g, r)
        ctx.T, ctx.out_steps, ctx.scale = T, out_steps, scale
        return loss

    @staticmethod
    def backward(ctx, g_loss):
        W_in, nu, W_out, D, X, pq, u, e_nu, L, h, ab, g, r = ctx.saved_tensors
        T, out_steps = ctx.T, ctx.out_steps
        E, B, n = r.shape[0], X.shape[2] // T, u.shape[1]
        g_D, g_W_out, g_h = output_backward(g_loss, ctx.scale, r, D, W_out, ab, g, h)
        g_h = g_h.view(E, n, -1, B)  # (E, n, T', B)
        u4 = u.view(E, n, T, B)
        Lo = L if out_steps is None else L[:, :, out_steps]
        g_L = torch.matmul(g_h, u4.transpose(-1, -2))  # (E, n, T', T)
        g_u = torch.matmul(Lo.transpose(-1, -2), g_h).view(E, n, T * B)
        g_pq = halves_grad(g_u, pq)
        # g_W_in = g_pq X^T as (X g_pq^T)^T: faster on a CPU with only d + 1 columns
        g_W_in = torch.bmm(X, g_pq.transpose(1, 2)).transpose(1, 2)
        # d L[t, s] / d nu = d exp((t - s) log lam) / d nu = (t - s) L[t, s] (-exp(nu))
        neg_lag = _negative_lags(T, X.dtype, X.device)  # -(t - s): the sign in the constant
        if out_steps is not None:
            neg_lag = neg_lag[out_steps]
        g_nu = (g_L * Lo * neg_lag).sum(dim=(-2, -1)) * e_nu
        g_nu = torch.where(nu.abs() <= NU_MAX, g_nu, 0.0)  # zero where nu is clamped (or NaN)
        return g_W_in, g_nu, g_W_out, g_D, None, None, None, None, None


def output_forward(h, W_out, D, Y, scale: float) -> tuple:
    """``FusedLoss``'s output gating, readout and loss: h (E, n, T'*B) -> (ab = W_out h,
    g = g_out(h), r = y - Y, loss (E,))."""
    m = W_out.shape[1] // 2
    ab = torch.bmm(W_out, h)  # (E, 2m, T'*B)
    g = ab[:, :m] * ab[:, m:]  # g_out(h_t)
    r = torch.baddbmm(Y, D, g, beta=-1.0)  # y - Y
    loss = r.square().mean(dim=(1, 2))
    if scale != 1.0:  # a product with 1.0 changes no bit: one kernel less for most tasks
        loss = loss * scale
    return ab, g, r, loss


def output_backward(g_loss, scale: float, r, D, W_out, ab, g, h) -> tuple:
    """The backward of ``output_forward`` (formulas: ``FusedLoss``): g_loss (E,) and the
    forward's r, ab, g, h -> (g_D, g_W_out, g_h (E, n, T'*B))."""
    _, d_out, TB_out = r.shape
    g_y = r * (g_loss * (2.0 * scale / (d_out * TB_out)))[:, None, None]
    g_D = torch.bmm(g_y, g.transpose(1, 2))
    g_g = torch.bmm(D.transpose(1, 2), g_y)  # (E, m, T'*B)
    g_ab = halves_grad(g_g, ab)
    g_W_out = torch.bmm(g_ab, h.transpose(1, 2))
    return g_D, g_W_out, torch.bmm(W_out.transpose(1, 2), g_ab)


def fused_loss(
    X: torch.Tensor,
    packed: dict[str, torch.Tensor],
    Y: torch.Tensor,
    T: int,
    out_steps: torch.Tensor | None,
    scale: float = 1.0,
) -> torch.Tensor:
    """The (E,) training losses of Eq. (2) with output gating (``FusedLoss``): X (E, d+1, T*B),
    Y (E, d_out, T'*B), ``packed`` from ``pack_params``; side gating is a ValueError."""
    if "W_out" not in packed:
        raise ValueError("fused_loss needs output gating (W_out); side gating uses forward_packed")
    return FusedLoss.apply(
        packed["W_in"], packed["nu"], packed["W_out"], packed["D"], X, Y, T, out_steps, scale
    )
