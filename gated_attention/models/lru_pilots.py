"""The LRU variants of the Fig. 4B setup check's pilots (ours, beyond the paper): the LRU
family of ``lru`` with its blocks' inputs normalised (``forward_prenorm``), and with its
nn.Linear-drawn matrices rescaled at init (``scale_linear``). The families of Fig. 4 use neither.
"""

from __future__ import annotations

import math

import torch

from . import lru
from .shell import linear

#: the endings of the names of every matrix drawn by nn.Linear's rule: embedding, readout,
#: GLU value and gate matrices, MLP matrices (not B, C, Dskip or the recurrence)
LINEAR_ENDINGS = ("W_emb", "W_out", "_W_1", "_W_2", "_W_3", "_W_4", "_W1", "_W2")


def scale_linear(P: lru.Params, factor: float) -> lru.Params:
    """A copy of P with every nn.Linear-drawn matrix (``LINEAR_ENDINGS``) times ``factor``:
    sqrt 3 turns their U(-1/sqrt(fan_in), 1/sqrt(fan_in)) draw into variance 1 / fan_in."""
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"the scale of the linear maps must be positive, got {factor!r}")
    return {k: v * factor if k.endswith(LINEAR_ENDINGS) else v for k, v in P.items()}


def normalise(u: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """u over its last axis to zero mean and unit variance, no affine map: (..., H) -> (..., H)."""
    mean = u.mean(-1, keepdim=True)
    return (u - mean) / (u.var(-1, keepdim=True, unbiased=False) + eps).sqrt()


def forward_prenorm(x: torch.Tensor, P: lru.Params) -> torch.Tensor:
    """``lru.forward`` with u normalised before each block and the readout, as the LRU paper's
    blocks normalise their input (ours)."""
    u = linear(x, P["W_emb"], P["b_emb"])  # (E, B, T, H)
    for l in lru.layers_of(P):
        v = lru.gate(normalise(u), P, l, "in")
        u = u + lru.gate(lru.lru_layer(v, P, l), P, l, "out")
    return linear(normalise(u), P["W_out"], P["b_out"])
