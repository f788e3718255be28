"""Did a seed learn the construction? The per-seed criterion and the transition it gives (ours).

A low loss alone cannot tell the construction from a good approximation (a network smaller than
the construction can reach a normalised loss of about 1e-2), so each seed is scored against a
criterion fixed in ``report/paper_values.json`` before the runs it scores:

    learned      normalised held-out loss (MSE / Var(teacher output)) <= LEARNED_LOSS
                 AND Score KV <= LEARNED_SCORE (Sec. 4.1, Table 1: lam ~ 1 states hold M_t linearly)
                 [AND Score Q <= LEARNED_SCORE, where the query group is scored too]
    transition   n* = the smallest swept n from which, at n and every larger n, at least half
                 of the seeds succeed (``transition_by_fraction``, Fig. 3A/B/C); None if none
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from .boundary import Network, require
from .scores import score_kv
from .thresholds import LAM_TOL

#: "learned the construction": normalised held-out loss at most this ...
LEARNED_LOSS = 1e-4
#: ... and Score KV (and Score Q where scored) at most this (paper_values.json, fig2/fig3 rows)
LEARNED_SCORE = 1e-3


def learned(norm_loss: float, score_kv: float, score_q: float | None = None) -> bool:
    """The per-seed criterion of the module docstring (NaN scores fail)."""
    ok = norm_loss <= LEARNED_LOSS and score_kv <= LEARNED_SCORE
    return bool(ok and (score_q is None or score_q <= LEARNED_SCORE))


def kv_score_unpruned(net: Network, teacher, x: torch.Tensor, tol: float = LAM_TOL) -> float:
    """Score KV from the states of every neuron with lam > 1 - tol of a whole (unpruned) member
    (dead neurons add nothing to the fit); 1 when there is no such neuron."""
    one = torch.nonzero(require(net, "kv_score_unpruned").lam > 1 - tol).flatten().tolist()
    return score_kv(net, teacher, x, one) if one else 1.0


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a fraction k / n (95% for z = 1.96); (0, 1) for n = 0."""
    if not (0 <= k <= n):
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclasses.dataclass(frozen=True)
class Fractions:
    """Per size: seeds that succeed (k) of R, the Wilson interval of k / R (lo, hi); n*."""

    sizes: tuple[int, ...]
    k: tuple[int, ...]
    R: int
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    estimate: int | None


def transition_by_fraction(sizes, success) -> Fractions:
    """n* of the module docstring from ``success`` (S sizes, R seeds) booleans; ``sizes`` (S,)
    strictly increasing."""
    sizes = np.asarray(sizes)
    ok = np.asarray(success, dtype=bool)
    if ok.ndim != 2 or ok.shape[0] != sizes.shape[0]:
        raise ValueError(f"success must have shape (S={sizes.shape[0]}, seeds), got {ok.shape}")
    if np.any(np.diff(sizes) <= 0):
        raise ValueError(f"sizes must increase strictly, got {sizes.tolist()}")
    R = ok.shape[1]
    k = ok.sum(axis=1)
    half = 2 * k >= R  # at least half of the seeds
    from_here = np.flip(np.cumprod(np.flip(half)))  # at this size and every larger one
    idx = np.flatnonzero(from_here)
    intervals = [wilson_interval(int(ki), R) for ki in k]
    return Fractions(
        sizes=tuple(int(s) for s in sizes),
        k=tuple(int(ki) for ki in k),
        R=R,
        lo=tuple(lo for lo, _ in intervals),
        hi=tuple(hi for _, hi in intervals),
        estimate=int(sizes[idx[0]]) if idx.size else None,
    )
