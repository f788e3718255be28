"""Helpers shared by the *linearised* constructions of App. B (LSTM, GRU, LRU): gates driven by
small inputs eps z, whose constant and even Taylor terms cancel in pairs of units with opposite
signs (eq-which-pair-product, book/which_rnns_can_be_attention.md), with sigmoid(a) = 1/2 + S(a):
pair_product(a, b) = 2 S(a) tanh(b) = a b / 2 + O(|a|^4 + |b|^4), so a paired construction's
relative error falls as eps^2 (``error_slope`` fits the rate).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def error_slope(eps: Sequence[float], errors: Sequence[float]) -> float:
    """Least-squares slope of log(error) against log(eps): the construction's convergence rate.

    Every error must be positive and finite; drop points at the rounding floor before fitting.
    """
    if len(eps) != len(errors) or len(eps) < 2:
        raise ValueError("need at least two (eps, error) pairs of equal length")
    if any(not (e > 0 and math.isfinite(e)) for e in list(eps) + list(errors)):
        raise ValueError("eps and errors must be positive and finite")
    lx = [math.log(e) for e in eps]
    ly = [math.log(e) for e in errors]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    sxy = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    return sxy / sxx


def pair_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """sigmoid(a) tanh(b) + sigmoid(-a) tanh(-b) = 2 S(a) tanh(b) ~ a b / 2 for small a, b."""
    return torch.sigmoid(a) * torch.tanh(b) + torch.sigmoid(-a) * torch.tanh(-b)


def relative_error(y: torch.Tensor, y_ref: torch.Tensor) -> float:
    """max |y - y_ref| / max |y_ref|."""
    return float((y - y_ref).abs().max() / y_ref.abs().max())


def random_inputs(d: int, *, B: int = 8, T: int = 32, seed: int = 0) -> torch.Tensor:
    """x ~ N(0, I), shape (B, T, d), float64, from a seeded generator."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, T, d, generator=g, dtype=torch.float64)


def attention_output(attention: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """y_t = sum_{t'<=t} v_t' k_t'^T q_t in float64 for x (B, T, d): ((Q K^T) * mask) V."""
    W_V, W_K, W_Q = (
        w.detach().to(torch.float64) for w in (attention.W_V, attention.W_K, attention.W_Q)
    )
    x = x.to(torch.float64)
    scores = (x @ W_Q.T) @ (x @ W_K.T).transpose(1, 2)  # (B, T, T): q_t . k_t'
    return scores.tril() @ (x @ W_V.T)  # (B, T, d_v)
