"""A Mamba-style selective layer (Gu & Dao, 2023; simplified, no convolution) in the shell of
Sec. 4.3: linear embedding -> selective diagonal recurrence -> side gate -> linear readout.

Departures from a minimal Mamba block (no convolution and no SiLU after it, a full-rank Delta, a
bare layer with the side gate reading x_t): the chapter which_rnns_can_be_attention lists them.
The real block is ``models.mamba_block``.

Glossary (code name -> symbol -> shape, E ensemble members, H = width channels, N states each):
    W_e, b_e        embedding u_t = W_e x_t + b_e                          (E, H, d_in), (E, H)
    W_Delta, b_Delta  step size Delta_t = softplus(W_Delta u_t + b_Delta)  (E, H, H), (E, H)
    W_B             input-dependent input matrix B_t = W_B u_t             (E, N, H)
    W_C             input-dependent output matrix C_t = W_C u_t            (E, N, H)
    A_log           A = -exp(A_log), the diagonal (per channel) dynamics    (E, H, N)
    Dskip           skip connection Dskip[c] u_t[c]                         (E, H)
    W_z, b_z        side gate silu(W_z x_t + b_z), from the current input   (E, H, d_in), (E, H)
    W_o, b_o        readout                                           (E, d_out, H), (E, d_out)
    h               state h_t[c, k], h_0 = 0                                (E, B, H, N)

For every channel c and state index k:
    h_t[c, k] = exp(Delta_t[c] A[c, k]) h_{t-1}[c, k] + Delta_t[c] B_t[k] u_t[c]
    y_t[c]    = sum_k C_t[k] h_t[c, k] + Dskip[c] u_t[c]
    o_t       = y_t * silu(W_z x_t + b_z)          (side gating, App. A.2: the gate sees x_t)
    out_t     = W_o o_t + b_o
B_t[k] u_t[c] is the input gating of Eq. (2) and C_t reads the state like a query: one layer can
implement linear attention (``constructions.mamba``; it needs N >= d_k and H >= d_v + d).
N = ``n_state`` defaults to 4 (Mamba's is 16).

Initialisation as Mamba (``init_A_log``, ``init_dt_bias``, Dskip = 1, every matrix as
``torch.nn.Linear``); A_log and Dskip get no weight decay. ``forward`` scans by doubling
(``diagonal_scan``: no exp of differences, so a_t = 1 is exact); ``reference`` loops over t.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .shell import Family, Params, init_linear, linear

DT_MIN, DT_MAX = 1e-3, 1e-1


def init_dt_bias(E: int, H: int, generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Mamba's Delta bias softplus^-1(dt), dt log-uniform in [DT_MIN, DT_MAX]: (E, H)."""
    log_dt = torch.rand(E, H, generator=generator, dtype=torch.float64)
    dt = torch.exp(log_dt * (math.log(DT_MAX) - math.log(DT_MIN)) + math.log(DT_MIN))
    return (dt + torch.log(-torch.expm1(-dt))).to(dtype)  # softplus(b) = dt


def init_A_log(E: int, H: int, N: int, dtype: torch.dtype) -> torch.Tensor:
    """Mamba's A_log[c, k] = log(k + 1), so A = -1, ..., -N in every channel: (E, H, N)."""
    A_log = torch.log(torch.arange(1, N + 1, dtype=torch.float64)).expand(E, H, N)
    return A_log.to(dtype).clone()


def init(
    d_in: int,
    d_out: int,
    width: int,
    E: int,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
    *,
    n_state: int = 4,
) -> Params:
    """Draw E members with Mamba's initialisation."""
    H, N = width, n_state
    P: Params = {}
    P["W_e"], P["b_e"] = init_linear(E, H, d_in, generator, dtype)
    P["W_Delta"], _ = init_linear(E, H, H, generator, dtype, bias=False)
    P["b_Delta"] = init_dt_bias(E, H, generator, dtype)
    P["W_B"], _ = init_linear(E, N, H, generator, dtype, bias=False)
    P["W_C"], _ = init_linear(E, N, H, generator, dtype, bias=False)
    P["A_log"] = init_A_log(E, H, N, dtype)
    P["Dskip"] = torch.ones(E, H, dtype=dtype)
    P["W_z"], P["b_z"] = init_linear(E, H, d_in, generator, dtype)
    P["W_o"], P["b_o"] = init_linear(E, d_out, H, generator, dtype)
    return P


def parameter_count_formula(d_in: int, d_out: int, width: int, n_state: int = 4) -> int:
    """2 H (d_in + 1) + H^2 + 2 H + 3 N H + d_out (H + 1), with H = width, N = n_state."""
    H, N = width, n_state
    return 2 * H * (d_in + 1) + H * H + 2 * H + 3 * N * H + d_out * (H + 1)


def diagonal_scan(a: torch.Tensor, b: torch.Tensor, dim: int = 2) -> torch.Tensor:
    """h_t = a_t * h_{t-1} + b_t (h_0 = 0) along ``dim`` for all t, by recursive doubling: after
    shift s, (a_t, b_t) composes steps t-2s+1 .. t ((a1, b1) then (a2, b2): (a2 a1, a2 b1 + b2))."""
    T, s = a.shape[dim], 1
    while s < T:
        head_a, tail_a = a.narrow(dim, 0, s), a.narrow(dim, s, T - s)
        head_b, tail_b = b.narrow(dim, 0, s), b.narrow(dim, s, T - s)
        b = torch.cat([head_b, tail_b + tail_a * b.narrow(dim, 0, T - s)], dim=dim)
        a = torch.cat([head_a, tail_a * a.narrow(dim, 0, T - s)], dim=dim)
        s *= 2
    return b


def selective_scan(xs, Delta, B_t, C_t, params: Params) -> torch.Tensor:
    """The scan and readout of the module docstring for all t (``diagonal_scan``), the scanned
    channels xs, Delta (E, B, T, H), B_t, C_t (E, B, T, N) -> y (E, B, T, H)."""
    A = -torch.exp(params["A_log"])  # (E, H, N)
    a = torch.exp(Delta[..., None] * A[:, None, None])  # (E, B, T, H, N)
    b = (Delta * xs)[..., None] * B_t[..., None, :]  # (E, B, T, H, N)
    h = diagonal_scan(a, b, dim=2)  # (E, B, T, H, N)
    return torch.einsum("ebthn,ebtn->ebth", h, C_t) + params["Dskip"][:, None, None] * xs


def forward(x: torch.Tensor, params: Params) -> torch.Tensor:
    """The fast form: x (E, B, T, d_in) -> out (E, B, T, d_out)."""
    u = linear(x, params["W_e"], params["b_e"])  # (E, B, T, H)
    Delta = F.softplus(linear(u, params["W_Delta"], params["b_Delta"]))  # (E, B, T, H)
    y = selective_scan(u, Delta, linear(u, params["W_B"]), linear(u, params["W_C"]), params)
    gate = F.silu(linear(x, params["W_z"], params["b_z"]))  # (E, B, T, H)
    return linear(y * gate, params["W_o"], params["b_o"])


def reference(x: torch.Tensor, params: Params) -> torch.Tensor:
    """The definition, a loop over t."""
    E, B, T, _ = x.shape
    A = -torch.exp(params["A_log"])  # (E, H, N)
    h = x.new_zeros(E, B, *A.shape[1:])  # (E, B, H, N)
    outs = []
    for t in range(T):
        x_t = x[:, :, t]  # (E, B, d_in)
        u = x_t @ params["W_e"].transpose(1, 2) + params["b_e"][:, None]  # (E, B, H)
        Delta = F.softplus(u @ params["W_Delta"].transpose(1, 2) + params["b_Delta"][:, None])
        B_t = u @ params["W_B"].transpose(1, 2)  # (E, B, N)
        C_t = u @ params["W_C"].transpose(1, 2)  # (E, B, N)
        decay = torch.exp(Delta[..., None] * A[:, None])  # (E, B, H, N)
        h = decay * h + (Delta * u)[..., None] * B_t[:, :, None, :]
        y = (h * C_t[:, :, None, :]).sum(-1) + params["Dskip"][:, None] * u  # (E, B, H)
        gate = F.silu(x_t @ params["W_z"].transpose(1, 2) + params["b_z"][:, None])
        outs.append((y * gate) @ params["W_o"].transpose(1, 2) + params["b_o"][:, None])
    return torch.stack(outs, dim=2)


MAMBA = Family(
    name="mamba",
    label="Mamba-style",
    init=init,
    forward=forward,
    reference=reference,
    no_decay=("A_log", "Dskip"),
)
