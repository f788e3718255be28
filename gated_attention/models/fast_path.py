"""The fused forward of Eq. (2) that the training engine runs (arXiv:2309.01775v2, Sec. 2).

The same function as ``gated_rnn.gated_rnn_forward`` (tests/test_training.py checks outputs and
gradients in float64), arranged for speed on a CPU:

* neuron-major activations: every activation is (E, neurons, T*B) with time-major columns
  (column t*B + b), so each product of Eq. (2) is one plain batched GEMM without copies;
* packed weights: W_in = [W_in1; W_in2] (E, 2n, d+1) and W_out = [W_out1; W_out2] (E, 2m, n),
  so each gating is one GEMM followed by an elementwise product (``GatedProduct``, whose
  backward writes both halves of the gradient into one buffer instead of concatenating);
* the scan h_t = sum_{s<=t} lam^(t-s) u_s is one GEMM with the decay matrix L (T x T per
  neuron), exact for lam = 0 and lam = 1;
* the output gating (most of the FLOPs) runs only at the time steps the loss reads;
* for training, ``fused_loss``: Eq. (2) and the squared error as one autograd node with a
  hand-written backward (``FusedLoss``): a dozen GEMMs and a few elementwise products per step,
  no autograd graph of small operations, the decay matrix as one ``exp``;
* for the engine's "compiled" mode, ``loss_and_grads``: the same loss and its gradients as one
  plain function (no autograd), the recurrence as a scan over t, written for ``torch.compile``
  to fuse the elementwise work around the GEMMs into a few loops.

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
from collections.abc import Callable

import torch

from .gated_rnn import NU_MAX

__all__ = [
    "GatedProduct",
    "decay_matrix_from_nu",
    "pack_params",
    "unpack_params",
    "inputs_neuron_major",
    "targets_neuron_major",
    "forward_packed",
    "gated_rnn_fast",
    "FusedLoss",
    "output_forward",
    "output_backward",
    "fused_loss",
    "scan",
    "loss_and_grads",
    "input_gating",
]


class GatedProduct(torch.autograd.Function):
    """(W_1 X) * (W_2 X) for W = [W_1; W_2] (E, 2k, K) and X (E, K, R) -> (E, k, R).

    One GEMM forward; backward: the gradient of W X is [g * (W_2 X); g * (W_1 X)], written
    into one buffer, then one GEMM per operand.
    """

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
        ab = ctx.ab
        k = W.shape[1] // 2
        g_ab = torch.empty_like(ab)
        torch.mul(grad, ab[:, k:], out=g_ab[:, :k])
        torch.mul(grad, ab[:, :k], out=g_ab[:, k:])
        g_W = torch.bmm(g_ab, X.transpose(1, 2)) if ctx.needs_input_grad[0] else None
        g_X = torch.bmm(W.transpose(1, 2), g_ab) if ctx.needs_input_grad[1] else None
        return g_W, g_X


def decay_matrix_from_nu(nu: torch.Tensor, T: int) -> tuple[torch.Tensor, torch.Tensor]:
    """L[..., t, s] = lam^(t-s) for s <= t, else 0, from nu (lam = exp(-exp(nu))), neuron-major.

    nu (*E, n) -> L (*E, n, T, T) and exp(nu) (*E, n), clamped as ``lam_from_nu`` clamps it.
    ``gated_rnn.decay_matrix`` is the readable twin (time-major, from lam, by a cumulative
    product). Here L = exp((t - s) log lam) with log lam = -exp(nu): one elementwise kernel and
    its backward, and still exact where lam is 0 (exp(nu) = exp(NU_MAX) sends every power above
    0 to 0) or 1 (log lam is set to 0), with finite gradients (tested against the twin).
    """
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
    """Eq. (2), fast: x (E, B, T, d) -> y (E, B, T', d_out), T' = len(out_steps) or T.

    Takes the parameters of ``gated_rnn_forward`` (leading dim E); see the module docstring.
    """
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
    """-lag (T, T) of ``_lags``: the backward's sign folded into a constant (negation is exact,
    so a sum of negated terms is the negated sum, bit for bit)."""
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
        g_pq = torch.empty_like(pq)
        torch.mul(g_u, pq[:, n:], out=g_pq[:, :n])
        torch.mul(g_u, pq[:, :n], out=g_pq[:, n:])
        # g_W_in = g_pq X^T, computed as (X g_pq^T)^T: with only d + 1 columns the product in
        # this orientation is ~4x faster on a CPU (MKL), the same numbers up to rounding
        g_W_in = torch.bmm(X, g_pq.transpose(1, 2)).transpose(1, 2)
        # d L[t, s] / d nu = d exp((t - s) log lam) / d nu = (t - s) L[t, s] (-exp(nu))
        neg_lag = _negative_lags(T, X.dtype, X.device)  # -(t - s): the sign in the constant
        if out_steps is not None:
            neg_lag = neg_lag[out_steps]
        g_nu = (g_L * Lo * neg_lag).sum(dim=(-2, -1)) * e_nu
        g_nu = torch.where(nu.abs() <= NU_MAX, g_nu, 0.0)  # zero where nu is clamped (or NaN)
        return g_W_in, g_nu, g_W_out, g_D, None, None, None, None, None


def output_forward(h, W_out, D, Y, scale: float) -> tuple:
    """The output gating, readout and loss of ``FusedLoss``'s forward: h (E, n, T'*B) ->
    (ab = W_out h, g = g_out(h), r = y - Y, loss (E,)), what ``output_backward`` takes back."""
    m = W_out.shape[1] // 2
    ab = torch.bmm(W_out, h)  # (E, 2m, T'*B)
    g = ab[:, :m] * ab[:, m:]  # g_out(h_t)
    r = torch.baddbmm(Y, D, g, beta=-1.0)  # y - Y
    loss = r.square().mean(dim=(1, 2))
    if scale != 1.0:  # a product with 1.0 changes no bit: one kernel less for most tasks
        loss = loss * scale
    return ab, g, r, loss


def output_backward(g_loss, scale: float, r, D, W_out, ab, g, h) -> tuple:
    """The backward of the readout and the output gating of ``FusedLoss`` (its docstring has
    the formulas): from the losses' gradient g_loss (E,) and the forward's r = y - Y
    (E, d_out, T'*B), ab = W_out h, g = g_out(h) and h (E, n, T'*B), to (g_D, g_W_out, g_h),
    g_h (E, n, T'*B). Shared with the bench's ways that change the recurrence only."""
    _, d_out, TB_out = r.shape
    m = g.shape[1]
    g_y = r * (g_loss * (2.0 * scale / (d_out * TB_out)))[:, None, None]
    g_D = torch.bmm(g_y, g.transpose(1, 2))
    g_g = torch.bmm(D.transpose(1, 2), g_y)  # (E, m, T'*B)
    g_ab = torch.empty_like(ab)
    torch.mul(g_g, ab[:, m:], out=g_ab[:, :m])
    torch.mul(g_g, ab[:, :m], out=g_ab[:, m:])
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
    """The (E,) training losses of Eq. (2) with output gating, ``FusedLoss`` (see there).

    X (E, d+1, T*B), Y (E, d_out, T'*B) neuron-major; ``packed`` from ``pack_params``.
    Equals ``scale * (forward_packed(X, packed, T, out_steps) - Y).square().mean(dim=(1, 2))``.
    """
    if "W_out" not in packed:
        raise ValueError("fused_loss needs output gating (W_out); side gating uses forward_packed")
    return FusedLoss.apply(
        packed["W_in"], packed["nu"], packed["W_out"], packed["D"], X, Y, T, out_steps, scale
    )


def scan(u: torch.Tensor, lam: torch.Tensor, reverse: bool = False) -> torch.Tensor:
    """h_t = lam * h_(t-1) + u_t along dim 2 of u (E, n, T, B), lam (E, n): the recurrence of
    Eq. (2) (``reverse``: h_t = lam * h_(t+1) + u_t, the adjoint that carries gradients back).
    Out of place and unrolled over t, so that ``torch.compile`` fuses it into one loop."""
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
    sum, as one function of plain tensors (the engine's "compiled" mode compiles it).
    ``gating``: how u and g_W_in are computed (``input_gating``'s signature; None: that one),
    the one piece a way to the floor may change (``tools.quadratic_gating``).

    The same arithmetic as ``FusedLoss`` (see its docstring for the backward), except the
    recurrence: h = ``scan(u, lam)`` instead of the decay matrix, and its adjoint
    g_u = ``scan(g_h, lam, reverse=True)`` (g_h zero at steps the loss does not read), so
    g_lam = sum_t g_u_t h_(t-1) and g_nu = -g_lam lam exp(nu). Exact at lam = 0 and lam = 1 as
    the scan is. ``tests/test_training.py`` checks it against ``FusedLoss`` in float64.

    The input gating's products, W_in X and its gradient g_[p; q] X^T, have inner or outer
    dimension d + 1 (5 in the paper): written as sums over the d + 1 inputs (``_small_bmm``),
    they are elementwise work that ``torch.compile`` fuses with the gating's product and the
    scan, where a GEMM of that shape runs far below the machine's peak (and p, q are
    recomputed in the backward rather than kept: ``input_gating``). So are the readout's
    gradients, of dimension d_out: g_g = D^T g_y (fused with g_ab) and g_D = g_y g^T (a sum
    over the T'*B tokens); on a 2-core CPU at the Sec. 4.1 config that took the compiled loss
    and gradients from 2.59 to 2.24 ms (min of 30 interleaved rounds; the bmm of g_g alone
    took 0.12 ms for 1.6 MFLOP). The output gating and readout: ``_output_by_tokens`` for one
    member, else ``_output_by_neurons`` (their docstrings say why).
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
    """``loss_and_grads``' output gating, readout, loss and their backward, neuron-major as
    ``FusedLoss`` has them: h (E, n, T', B), Y (E, d_out, T'*B) -> (loss (E,), g_W_out, g_D,
    g_h (E, n, T', B))."""
    E, n, T_out, B = h.shape
    m, h = W_out.shape[1] // 2, h.reshape(E, n, -1)
    ab = torch.bmm(W_out, h)
    g = ab[:, :m] * ab[:, m:]
    r = torch.baddbmm(Y, D, g, beta=-1.0)  # y - Y
    loss = r.square().mean(dim=(1, 2)) * scale
    g_y = r * (2.0 * scale / (r.shape[1] * r.shape[2]))
    g_D = _small_bmm(g_y, g.transpose(1, 2))  # (E, d_out, m): d_out rows, a sum over T'*B
    g_g = _small_bmm(D.transpose(1, 2), g_y)  # (E, m, T'*B): a sum over d_out, fused below
    g_ab = torch.cat([g_g * ab[:, m:], g_g * ab[:, :m]], dim=1)
    g_h = torch.bmm(W_out.transpose(1, 2), g_ab).view(E, n, T_out, B)
    return loss, torch.bmm(g_ab, h.transpose(1, 2)), g_D, g_h


def _output_by_tokens(h: torch.Tensor, W_out, D, Y, scale: float) -> tuple:
    """``_output_by_neurons`` with the T'*B tokens as rows: h^T (E, T'*B, n) copied once, then
    the three GEMMs write token-major outputs, which MKL makes faster here (one member, 2-core
    CPU, Sec. 4.1 config: the compiled step 1.98 / 2.01 ms against 2.06 / 2.08, min / q1 of
    40 interleaved rounds; n = 64 0.98 against 1.09; n = 28 level); for two or more members
    the batched GEMMs and the loops of this layout were slower (2 x 28 0.64 against 0.59 ms,
    4 x 100 9.4 against 8.1, 16 x 28 5.5 against 4.7), so ``loss_and_grads`` keeps this one
    for one member. The same function up to rounding (tested in float64)."""
    E, n, T_out, B = h.shape
    m, hT = W_out.shape[1] // 2, h.permute(0, 2, 3, 1).reshape(E, -1, n)
    ab = torch.bmm(hT, W_out.transpose(1, 2))  # (E, T'*B, 2m)
    g = ab[..., :m] * ab[..., m:]
    r = torch.baddbmm(Y.transpose(1, 2), g, D.transpose(1, 2), beta=-1.0)  # (E, T'*B, d_out)
    loss = r.square().mean(dim=(1, 2)) * scale
    g_y = r * (2.0 * scale / (r.shape[1] * r.shape[2]))
    g_D = _column_sums([g.transpose(1, 2)], g_y.transpose(1, 2))  # (E, d_out, m): over tokens
    g_g = _small_bmm(g_y, D)  # (E, T'*B, m): a sum over d_out
    g_ab = torch.cat([g_g * ab[..., m:], g_g * ab[..., :m]], dim=2)
    g_h = torch.bmm(g_ab, W_out).view(E, T_out, B, n).permute(0, 3, 1, 2)  # (E, n, T', B)
    return loss, torch.bmm(g_ab.transpose(1, 2), hT), g_D, g_h


def input_gating(W_in: torch.Tensor, X: torch.Tensor) -> tuple[torch.Tensor, Callable]:
    """(u, grad): Eq. (2)'s input gating u = p * q, p = W_in1 X, q = W_in2 X (E, n, T*B) of
    W_in (E, 2n, d+1) and X (E, d+1, T*B), and grad(g_u) -> g_W_in, for ``loss_and_grads``:
    g_W_in1 = (g_u * q) X^T, g_W_in2 = (g_u * p) X^T. Every product as a sum over the d + 1
    inputs (``_small_bmm``), fused by ``torch.compile`` with the gating's product and the
    scan; the backward computes p and q again from X (d + 1 numbers a column) rather than
    keep the 2n-wide [p; q], once a column for all d + 1 sums of each gradient
    (``_column_sums``): less memory moved, the same numbers (float32, compiled: bit for bit).
    On a 2-core CPU, the compiled step with AdamW, min / q1 of 40 interleaved rounds: the
    16 x 28 ensemble 6.15 / 6.61 ms against 6.43 / 6.96 with [p; q] kept, then 4.90 / 5.12
    against 5.00 / 5.29 with the sums in one pass (one student: 2.33 / 2.48 against
    2.34 / 2.56, then 2.12 / 2.15 against 2.19 / 2.26)."""
    n = W_in.shape[1] // 2
    W1, W2 = W_in[:, :n], W_in[:, n:]

    def grad(g_u: torch.Tensor) -> torch.Tensor:
        E, K = X.shape[0], X.shape[1]  # (g_u * q) X^T and (g_u * p) X^T, (E, 2 * K, n)
        sums = _column_sums([g_u * _small_bmm(W2, X), g_u * _small_bmm(W1, X)], X)
        return sums.view(E, 2, K, n).transpose(2, 3).reshape(E, 2 * n, K)  # (E, 2n, d+1)

    return _small_bmm(W1, X) * _small_bmm(W2, X), grad


def _small_bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b (a (E, M, K), b (E, K, N)) as a broadcast product summed over K, for
    ``torch.compile`` to fuse with its neighbours where K or N is tiny (d + 1): the sum runs
    over dim 2 of (E, M, K, N) when K <= N, else over the last dim of (E, M, N, K), along
    memory contiguous in both operands as ``loss_and_grads`` passes them. The same numbers as
    ``torch.bmm`` up to the order of the sum; eagerly it builds all M K N products."""
    if a.shape[2] <= b.shape[2]:  # K the smaller: sum over dim 2 of (E, M, K, N)
        return (a[:, :, :, None] * b[:, None, :, :]).sum(2)
    return (a[:, :, None, :] * b.transpose(1, 2)[:, None, :, :]).sum(3)  # (E, M, N, K)


def _column_sums(a: list[torch.Tensor], b: torch.Tensor) -> torch.Tensor:
    """Each a_i b^T (a_i (E, M, N), b (E, K, N)) as K sums over the N columns, one per row of
    b, for ``torch.compile`` to run in one pass over the columns where K is tiny (d + 1):
    whatever the a_i are computed from is computed once a column, not once for each of the K
    sums. Returns (E, len(a) * K, M), row i * K + k the sums of a_i times row k of b (stacked
    on a dimension of whole (E, M) blocks: the sums are written where they go, no copies).
    The same numbers as ``_small_bmm(a_i, b.transpose(1, 2))``, bit for bit (the same sums in
    the same order); eagerly it builds K products of each a_i's size."""
    return torch.stack([(x * b[:, None, k]).sum(-1) for x in a for k in range(b.shape[1])], dim=1)
