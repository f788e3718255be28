"""Capped memory (ours, beyond the paper): the construction with lam <= lam_max < 1 on its
key-value neurons, its error law, and banks of key-value neurons (why: book/beyond.md, "Capped
memory"). For a constant input the relative error at step T is exactly (``planted_error``)

    e_1(T, lam) = 1 - (1 - lam^T) / (T (1 - lam)) = T (1 - lam) / 2 + O((T (1 - lam))^2);

p banks (lam_max^j, j = 1..p, combined with ``bank_coefficients``) make it O((T (1 - lam_max))^p)
for p times the key-value neurons (``cap_memory(rnn, lam_max, banks=p)``).

Glossary (code name -> symbol -> shape):
    lam_max   the cap on lam of the key-value neurons                 scalar in (0, 1)
    banks     p, the copies of each key-value neuron                  int >= 1
    x         T (1 - lam_max), the memory deficit of the error law    scalar
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch

from ..models.attention import random_attention
from ..models.gated_rnn import GatedRNN
from .gated_rnn import construct_rnn
from .linearised import error_slope, random_inputs


def check_lam_max(lam_max: float) -> float:
    """lam_max as a float in (0, 1]; a ValueError that says what is wrong otherwise."""
    if isinstance(lam_max, bool) or not isinstance(lam_max, int | float):
        raise ValueError(f"lam_max must be a number in (0, 1], got {lam_max!r}")
    if not (0.0 < float(lam_max) <= 1.0) or math.isnan(lam_max):
        raise ValueError(f"lam_max must lie in (0, 1] (1: no cap), got {lam_max!r}")
    return float(lam_max)


def _check_banks(banks: int) -> int:
    if isinstance(banks, bool) or not isinstance(banks, int) or banks < 1:
        raise ValueError(f"banks must be a positive integer, got {banks!r}")
    return banks


def bank_coefficients(banks: int) -> list[int]:
    """c_j = (-1)^(j+1) binom(p, j), j = 1..p: sum_j c_j z^j = 1 - (1 - z)^p."""
    p = _check_banks(banks)
    return [(-1) ** (j + 1) * math.comb(p, j) for j in range(1, p + 1)]


def memory_kernel(lam: float, k, banks: int = 1):
    """The weight the capped construction gives to lag k: 1 - (1 - lam^k)^banks."""
    return 1 - (1 - lam**k) ** _check_banks(banks)


def planted_error(lam_max: float, T: int, banks: int = 1) -> float:
    """Relative error at step T for a constant input: (1/T) sum_{k<T} (1 - lam^k)^banks."""
    lam = check_lam_max(lam_max)
    if not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
    p = _check_banks(banks)
    if p == 1 and lam < 1.0:
        return 1.0 - (1.0 - lam**T) / (T * (1.0 - lam))
    return sum((1.0 - lam**k) ** p for k in range(T)) / T


def cap_memory(rnn: GatedRNN, lam_max: float, *, banks: int = 1) -> GatedRNN:
    """A copy of an output-gated construction with each lam = 1 neuron replaced by ``banks``
    neurons at lam_max^1 .. lam_max^banks, read as sum_j c_j h^(j) (``bank_coefficients``).
    A ValueError for a side-gated network."""
    lam_max = check_lam_max(lam_max)
    p = _check_banks(banks)
    if rnn.side:
        raise ValueError("cap_memory takes an output-gated network (side=False)")
    with torch.no_grad():
        lam = rnn.lam.to(torch.float64)
        kv = [k for k in range(rnn.n) if lam[k] == 1.0]
        others = [k for k in range(rnn.n) if lam[k] != 1.0]
        rows = [k for k in kv for _ in range(p)] + others  # source of each new neuron
        powers = [j for _ in kv for j in range(1, p + 1)] + [0] * len(others)
        coeff = [c for _ in kv for c in bank_coefficients(p)] + [1] * len(others)
        out = GatedRNN(rnn.d, len(rows), rnn.m, rnn.d_out, dtype=rnn.D.dtype)
        src = torch.tensor(rows)
        c = torch.tensor(coeff, dtype=rnn.D.dtype)
        out.W_in1.copy_(rnn.W_in1[src])
        out.W_in2.copy_(rnn.W_in2[src])
        out.W_out1.copy_(rnn.W_out1[:, src] * c)
        out.W_out2.copy_(rnn.W_out2[:, src] * c)
        out.D.copy_(rnn.D)
        new_lam = [lam_max**j if j else float(lam[k]) for k, j in zip(rows, powers, strict=True)]
        out.set_lam(torch.tensor(new_lam, dtype=torch.float64))
    return out


def constant_input_error(lam_max: float, T: int, *, banks: int = 1, seed: int = 0) -> float:
    """``planted_error`` measured: ||y_T^cap - y_T|| / ||y_T|| for one N(0, I) input x repeated
    T times, ``random_attention(3, seed=seed)``'s symmetric construction capped."""
    layer = random_attention(3, seed=seed)
    rnn = cap_memory(construct_rnn(layer, "symmetric"), lam_max, banks=banks)
    x = random_inputs(layer.d, B=1, T=1, seed=30_000 + seed).expand(1, T, layer.d).contiguous()
    with torch.no_grad():
        y, y_cap = layer(x)[0, -1], rnn(x)[0, -1]
    return float((y - y_cap).norm() / y.norm())


@dataclasses.dataclass(frozen=True)
class CappedPoint:
    """One measurement: relative RMS error at step T of the capped construction."""

    lam_max: float
    T: int
    banks: int
    error: float

    @property
    def x(self) -> float:
        """T (1 - lam_max)."""
        return self.T * (1.0 - self.lam_max)


def capped_errors(
    lams: Sequence[float],
    Ts: Sequence[int],
    *,
    d: int = 4,
    banks: int = 1,
    seeds: Sequence[int] = range(3),
    batch: int = 64,
) -> list[CappedPoint]:
    """sqrt(sum ||y_T^cap - y_T||^2 / sum ||y_T||^2) for every (lam_max, T), over seeds
    (``random_attention(d, seed=seed)``'s capped construction) and ``batch`` N(0, I) sequences."""
    rnns = {s: construct_rnn(random_attention(d, seed=s), "symmetric") for s in seeds}
    layers = {s: random_attention(d, seed=s) for s in seeds}
    points = []
    for T in Ts:
        xs = {s: random_inputs(d, B=batch, T=T, seed=20_000 + s) for s in seeds}
        with torch.no_grad():
            ys = {s: layers[s](xs[s])[:, -1] for s in seeds}
            for lam_max in lams:
                num = den = 0.0
                for s in seeds:
                    y_cap = cap_memory(rnns[s], lam_max, banks=banks)(xs[s])[:, -1]
                    num += float((y_cap - ys[s]).square().sum())
                    den += float(ys[s].square().sum())
                points.append(CappedPoint(float(lam_max), int(T), banks, math.sqrt(num / den)))
    return points


def fit_exponent(points: Sequence[CappedPoint], lo: float = 1e-3, hi: float = 1e-1) -> float:
    """Slope of log error on log T (1 - lam_max) over the points with x in [lo, hi]."""
    inside = [p for p in points if lo <= p.x <= hi]
    if len(inside) < 2:
        raise ValueError(f"need at least two points with T (1 - lam_max) in [{lo}, {hi}]")
    return error_slope([p.x for p in inside], [p.error for p in inside])
