"""The Mamba block as the Mamba paper defines it (Gu & Dao, 2023, Sec. 3.4, Fig. 3), beside the
simplified layer of ``models.mamba`` (ours, beyond the paper; Why:
book/which_rnns_can_be_attention.md, "The real blocks").

One block maps x_t (d_in) to out_t (d_out), per member of an ensemble of E:
    [xi_t; z_t] = W_in x_t (+ b_in)              input projection to D inner channels and the gate
    xc_t[c]    = sum_m w_conv[c, m] xi_{t-K+1+m}[c] + b_conv[c]   depthwise causal convolution
                 (kernel K = d_conv, zeros before t = 0; tap m = K - 1 reads the current step)
    xs_t       = silu(xc_t)                       the scanned channels
    [delta_t; B_t; C_t] = W_x xs_t                x_proj, no bias: dt_rank R, N, N numbers
    Delta_t    = softplus(W_dt delta_t + b_dt)    the input-dependent, rank-R step size (D)
    h_t[c, k]  = exp(Delta_t[c] A[c, k]) h_{t-1}[c, k] + Delta_t[c] B_t[k] xs_t[c],  h_0 = 0
    y_t[c]     = sum_k C_t[k] h_t[c, k] + Dskip[c] xs_t[c]
    out_t      = W_out (y_t * silu(z_t)) (+ b_out)
A = -exp(A_log). As in the Mamba paper's code, only the convolution has a bias by default; the
residual connection and RMSNorm around the block are not part of it.

Glossary (code name -> symbol -> shape; E members, D = width inner channels, N = n_state,
R = dt_rank, K = d_conv):
    W_in, b_in      input projection [xi; z] = W_in x + b_in        (E, 2D, d_in), (E, 2D)
    w_conv, b_conv  depthwise causal convolution                      (E, D, K), (E, D)
    W_x             x_proj: [delta; B; C] = W_x xs                    (E, R + 2N, D)
    W_dt, b_dt      dt_proj: Delta = softplus(W_dt delta + b_dt)      (E, D, R), (E, D)
    A_log           A = -exp(A_log), per channel and state            (E, D, N)
    Dskip           skip connection Dskip[c] xs_t[c]                  (E, D)
    W_out, b_out    output projection                          (E, d_out, D), (E, d_out)
    h               state h_t[c, k], h_0 = 0                          (E, B, D, N)
b_in and b_out exist only with ``bias=True``, b_conv only with ``conv_bias=True``.

Initialisation (the Mamba paper's code): projections as ``torch.nn.Linear``, the convolution as
``torch.nn.Conv1d`` (fan-in K), A_log, Dskip, b_dt as ``models.mamba``, W_dt ~ U(-R^-1/2,
R^-1/2); A_log and Dskip get no weight decay. Constructions: ``constructions.real_blocks``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .mamba import init_A_log, init_dt_bias, selective_scan
from .shell import Family, Params, init_linear, linear


@dataclass(frozen=True)
class MambaBlockConfig:
    """The block's sizes and switches besides its width D (``dt_rank=None``: ceil(d_in / 16))."""

    n_state: int = 16
    dt_rank: int | None = None
    d_conv: int = 4
    bias: bool = False
    conv_bias: bool = True

    def rank(self, d_in: int) -> int:
        """The dt_rank R used for an input of size d_in."""
        return math.ceil(d_in / 16) if self.dt_rank is None else self.dt_rank


def init(
    d_in: int,
    d_out: int,
    width: int,
    E: int,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
    *,
    config: MambaBlockConfig = MambaBlockConfig(),
) -> Params:
    """Draw E blocks of D = width inner channels with the Mamba paper's initialisation."""
    D, N, K, R = width, config.n_state, config.d_conv, config.rank(d_in)
    P: Params = {}
    P["W_in"], b_in = init_linear(E, 2 * D, d_in, generator, dtype, bias=config.bias)
    P["w_conv"], b_conv = init_linear(E, D, K, generator, dtype, bias=config.conv_bias)
    P["W_x"], _ = init_linear(E, R + 2 * N, D, generator, dtype, bias=False)
    P["W_dt"], _ = init_linear(E, D, R, generator, dtype, bias=False)
    P["b_dt"] = init_dt_bias(E, D, generator, dtype)
    P["A_log"] = init_A_log(E, D, N, dtype)
    P["Dskip"] = torch.ones(E, D, dtype=dtype)
    P["W_out"], b_out = init_linear(E, d_out, D, generator, dtype, bias=config.bias)
    if config.bias:
        P["b_in"], P["b_out"] = b_in, b_out
    if config.conv_bias:
        P["b_conv"] = b_conv
    return P


def parameter_count_formula(
    d_in: int, d_out: int, width: int, config: MambaBlockConfig = MambaBlockConfig()
) -> int:
    """D (2 d_in + K + 2 R + 3 N + 2 + d_out) + [bias] (2 D + d_out) + [conv_bias] D."""
    D, N, K, R = width, config.n_state, config.d_conv, config.rank(d_in)
    count = D * (2 * d_in + K + 2 * R + 3 * N + 2 + d_out)
    return count + config.bias * (2 * D + d_out) + config.conv_bias * D


def _conv(xi: torch.Tensor, params: Params) -> torch.Tensor:
    """Depthwise causal convolution over t: xi (E, B, T, D) -> (E, B, T, D)."""
    w = params["w_conv"]  # (E, D, K)
    K, T = w.shape[-1], xi.shape[2]
    padded = F.pad(xi, (0, 0, K - 1, 0))  # K - 1 zero steps before t = 0
    out = sum(padded[:, :, m : m + T] * w[:, None, None, :, m] for m in range(K))
    if "b_conv" in params:
        out = out + params["b_conv"][:, None, None]
    return out


def forward(x: torch.Tensor, params: Params) -> torch.Tensor:
    """The fast form: x (E, B, T, d_in) -> out (E, B, T, d_out)."""
    D, N = params["A_log"].shape[-2:]  # inner channels, states per channel
    R = params["W_dt"].shape[-1]
    xi, z = linear(x, params["W_in"], params.get("b_in")).split([D, D], dim=-1)
    xs = F.silu(_conv(xi, params))  # (E, B, T, D)
    delta, B_t, C_t = linear(xs, params["W_x"]).split([R, N, N], dim=-1)
    Delta = F.softplus(linear(delta, params["W_dt"], params["b_dt"]))  # (E, B, T, D)
    y = selective_scan(xs, Delta, B_t, C_t, params)  # (E, B, T, D)
    return linear(y * F.silu(z), params["W_out"], params.get("b_out"))


def reference(x: torch.Tensor, params: Params) -> torch.Tensor:
    """The definition, one time step at a time (a buffer of the last K inputs)."""
    E, B, T, _ = x.shape
    D, N = params["A_log"].shape[-2:]  # inner channels, states per channel
    R, K = params["W_dt"].shape[-1], params["w_conv"].shape[-1]
    A = -torch.exp(params["A_log"])[:, None]  # (E, 1, D, N)
    h = x.new_zeros(E, B, D, N)
    window = [x.new_zeros(E, B, D) for _ in range(K)]  # xi of steps t-K+1 .. t
    outs = []
    for t in range(T):
        xz = x[:, :, t] @ params["W_in"].transpose(1, 2)  # (E, B, 2D)
        if "b_in" in params:
            xz = xz + params["b_in"][:, None]
        xi, z = xz[..., :D], xz[..., D:]
        window = window[1:] + [xi]
        xc = sum(window[m] * params["w_conv"][:, None, :, m] for m in range(K))
        if "b_conv" in params:
            xc = xc + params["b_conv"][:, None]
        xs = F.silu(xc)  # (E, B, D)
        x_dbl = xs @ params["W_x"].transpose(1, 2)  # (E, B, R + 2N)
        delta, B_t, C_t = x_dbl[..., :R], x_dbl[..., R : R + N], x_dbl[..., R + N :]
        dt = delta @ params["W_dt"].transpose(1, 2) + params["b_dt"][:, None]
        Delta = F.softplus(dt)  # (E, B, D)
        h = torch.exp(Delta[..., None] * A) * h + (Delta * xs)[..., None] * B_t[:, :, None]
        y = (h * C_t[:, :, None]).sum(-1) + params["Dskip"][:, None] * xs  # (E, B, D)
        out = (y * F.silu(z)) @ params["W_out"].transpose(1, 2)
        if "b_out" in params:
            out = out + params["b_out"][:, None]
        outs.append(out)
    return torch.stack(outs, dim=2)


MAMBA_BLOCK = Family(
    name="mamba_block",
    label="Mamba block",
    init=init,
    forward=forward,
    reference=reference,
    no_decay=("A_log", "Dskip"),
)
