"""The loss edge of Fig. 3A-C: from which size the loss is ~0, one rule for the three panels.

The paper reads off Fig. 3 that the loss falls to ~0 only from about twice the construction's
neuron count (Sec. 4.2 and 5.2). What "~0" means is a level, and the edge moves with it, so the
edge is given at several levels (``LEVELS``), one of them central (``CENTRAL_LEVEL``), all fixed
before the runs they score:

    excess loss   e(n, seed): 0 = the construction's loss, 1 = predicting 0
                  Fig. 3A/B: held-out MSE / Var(teacher output) (the construction's loss is 0)
                  Fig. 3C:   (RNN loss - loss of one optimal GD step, paired on the same
                             held-out sequences) / (loss of predicting 0 - loss of one GD step)
    edge n*_L     the smallest swept n such that, at n and at every larger swept n, the median
                  over seeds of e is at most L; None when the largest size is above L.
                  Ties: with an even number of seeds the median is the geometric mean of the
                  two middle seeds (the median of log10 e), so "half the seeds below L" does
                  not decide alone.
    ratio         n*_L / the construction's count: the paper's "about twice" is 2.

Glossary (code name -> paper symbol -> section):
    LEVELS          the levels L at which the edge is given          ours (Fig. 3 plots the loss)
    CENTRAL_LEVEL   the level that scores the claim                  ours
    Edge            n*_L of one sweep at one level
    loss_edge       n*_L from excess losses (sizes, seeds)           Sec. 4.2, 5.2, Fig. 3A-C
    edges           n*_L at every level of LEVELS
    median_excess   the median over seeds per size (the curve the edge reads)
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["CENTRAL_LEVEL", "LEVELS", "Edge", "edges", "loss_edge", "median_excess"]

#: the levels of "loss ~0" at which the edge is given (excess loss: 1 = predicting 0)
LEVELS = (1e-2, 1e-4, 1e-6)
#: the level that scores the claim (fixed before the runs it scores)
CENTRAL_LEVEL = 1e-4
#: an excess loss at or below 0 (a network at or below the construction's loss on the held-out
#: sequences, within their noise) counts as this, so that logs are finite
FLOOR = 1e-12


@dataclasses.dataclass(frozen=True)
class Edge:
    """n*_L (None: no edge among the swept sizes) at ``level``; ``construction`` the count the
    ratio is taken against."""

    level: float
    estimate: int | None
    construction: int

    @property
    def ratio(self) -> float:
        """n*_L over the construction's count (NaN without an edge)."""
        return float("nan") if self.estimate is None else self.estimate / self.construction


def _check(sizes, excess) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.asarray(sizes)
    E = np.asarray(excess, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] != sizes.shape[0]:
        raise ValueError(f"excess must have shape (S={sizes.shape[0]}, seeds), got {E.shape}")
    if np.any(np.diff(sizes) <= 0):
        raise ValueError(f"sizes must increase strictly, got {sizes.tolist()}")
    if not np.all(np.isfinite(E)):
        raise ValueError("excess losses must be finite (a diverged member: report it apart)")
    return sizes, E


def median_excess(excess) -> np.ndarray:
    """(S,) the median over seeds of the excess loss per size, as 10 ** median(log10 e) (an
    even number of seeds: the geometric mean of the two middle ones); e <= 0 counts as FLOOR."""
    E = np.maximum(np.asarray(excess, dtype=np.float64), FLOOR)
    return 10 ** np.median(np.log10(E), axis=1)


def loss_edge(sizes, excess, level: float, construction: int) -> Edge:
    """n*_L of one sweep: ``sizes`` (S,) increasing, ``excess`` (S, R) excess losses."""
    sizes, E = _check(sizes, excess)
    if not level > 0:
        raise ValueError(f"level must be positive, got {level}")
    if not (isinstance(construction, int) and construction > 0):
        raise ValueError(f"construction must be a positive neuron count, got {construction!r}")
    below = median_excess(E) <= level
    ok = np.flip(np.cumprod(np.flip(below)))  # ok[i]: below at i and at every larger size
    idx = np.flatnonzero(ok)
    return Edge(level, int(sizes[idx[0]]) if idx.size else None, construction)


def edges(sizes, excess, construction: int) -> dict[float, Edge]:
    """n*_L at every level of LEVELS."""
    return {L: loss_edge(sizes, excess, L, construction) for L in LEVELS}
