"""A 1-layer Mamba-style layer that implements linear self-attention exactly (Table 3, App. B.2).

The layer (``models.mamba``), channel c, state k: h_t[c, k] = exp(Delta_t[c] A[c, k]) h_{t-1}[c, k]
+ Delta_t[c] B_t[k] u_t[c], y_t[c] = sum_k C_t[k] h_t[c, k] + Dskip[c] u_t[c], and
out_t = W_o (y_t * silu(W_z x_t + b_z)). Layout (H = d_v + d channels, N = d_k states):
    channels   u_t = W_e x_t = [W_V x_t; x_t]: the values, and x_t itself for keys and queries
    B_t, C_t   W_B u_t = W_K x_t / Delta0 (the key), W_C u_t = W_Q x_t (the query)
    A          A_log = -inf: exp(Delta A) = 1, a perfect memory, h_t[c, k] = M_t[c, k] for c < d_v
    Delta      W_Delta = 0, b_Delta = softplus^-1(1): Delta0 ~ 1, divided out of W_B exactly
    gate       W_z = 0, b_z = gate_bias: the constant silu(gate_bias), divided out of W_o; Dskip = 0
    readout    W_o = [I_{d_v}, 0] / silu(gate_bias): out_t = M_t q_t, exact up to rounding
A finite A_log leaks: a relative error of order T e^A_log (book/which_rnns_can_be_attention.md).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..models.attention import LinearSelfAttention
from ..models.mamba import forward as mamba_forward
from .linearised import attention_output, random_inputs


def mamba_construction(
    attention: LinearSelfAttention,
    *,
    A_log: float = -math.inf,
    gate_bias: float = 1.0,
    dtype: torch.dtype = torch.float64,
) -> dict[str, torch.Tensor]:
    """Parameters (ensemble E = 1) of the Mamba family that compute ``attention``'s output."""
    W_V, W_K, W_Q = (w.detach().to(dtype) for w in (attention.W_V, attention.W_K, attention.W_Q))
    d_v, d = W_V.shape
    d_k = W_K.shape[0]
    H, N = d_v + d, d_k
    zeros = torch.zeros
    W_e = torch.cat([W_V, torch.eye(d, dtype=dtype)])  # (H, d): [v_t; x_t]
    b_Delta = torch.full((H,), math.log(math.e - 1), dtype=dtype)  # softplus^-1(1)
    Delta0 = F.softplus(b_Delta)  # (H,), all equal; divided out below as the forward computes it
    W_B = torch.cat([zeros(N, d_v, dtype=dtype), W_K], dim=1) / Delta0[0]  # (N, H): keys
    W_C = torch.cat([zeros(N, d_v, dtype=dtype), W_Q], dim=1)  # (N, H): queries
    gate = F.silu(torch.tensor(gate_bias, dtype=dtype))
    W_o = torch.cat([torch.eye(d_v, dtype=dtype), zeros(d_v, d, dtype=dtype)], dim=1) / gate
    params = {
        "W_e": W_e,
        "b_e": zeros(H, dtype=dtype),
        "W_Delta": zeros(H, H, dtype=dtype),
        "b_Delta": b_Delta,
        "W_B": W_B,
        "W_C": W_C,
        "A_log": torch.full((H, N), A_log, dtype=dtype),
        "Dskip": zeros(H, dtype=dtype),
        "W_z": zeros(H, d, dtype=dtype),
        "b_z": torch.full((H,), gate_bias, dtype=dtype),
        "W_o": W_o,
        "b_o": zeros(d_v, dtype=dtype),
    }
    return {k: v[None].clone() for k, v in params.items()}  # the ensemble dim, E = 1


def mamba_error(
    attention: LinearSelfAttention,
    params: dict[str, torch.Tensor] | None = None,
    *,
    T: int = 32,
    seed: int = 0,
    **construction_kwargs,
) -> float:
    """max |out_mamba - y_attention| over 8 random Gaussian sequences of length T (float64);
    ``params`` defaults to ``mamba_construction(attention, **construction_kwargs)``."""
    if params is None:
        params = mamba_construction(attention, **construction_kwargs)
    x = random_inputs(attention.d, T=T, seed=seed)
    with torch.no_grad():
        y = mamba_forward(x[None], params)[0]
    return float((y - attention_output(attention, x)).abs().max())
