"""The loss edge of Fig. 3A-C: from which size the loss is ~0, one rule for the three panels.

The paper reads off Fig. 3 that the loss falls to ~0 only from about twice the construction's
neuron count (Sec. 4.2, 5.2). The edge moves with what "~0" means, so it is given at several
levels fixed before the runs (ours, as are ``edge_interval`` and ``still_learning``; the
estimator in words: book/how_many_neurons.md):

    excess loss   e(n, seed): 0 = the construction's loss, 1 = predicting 0
                  Fig. 3A/B: held-out MSE / Var(teacher output) (the construction's loss is 0)
                  Fig. 3C:   (RNN loss - loss of one optimal GD step, paired on the same
                             held-out sequences) / (loss of predicting 0 - loss of one GD step)
    edge n*_L     the smallest swept n such that, at n and at every larger swept n, the median
                  over seeds of e is at most L (``median_excess``); None when the largest size
                  is above L (``loss_edge``; every level of ``LEVELS``: ``edges``)
    ratio         n*_L / the construction's count: the paper's "about twice" is 2
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: the levels of "loss ~0" at which the edge is given (excess loss: 1 = predicting 0)
LEVELS = (1e-2, 1e-4, 1e-6)
#: the level that scores the claim (fixed before the runs it scores)
CENTRAL_LEVEL = 1e-4
#: an excess loss at or below 0 (a network at or below the construction's loss on the held-out
#: sequences, within their noise) counts as this, so that logs are finite
FLOOR = 1e-12
#: the bootstrap of ``edge_interval``: draws and the seed of its generator
DRAWS, BOOT_SEED = 2000, 0
#: ``still_learning``: the share of the steps looked back over, and the fall that counts
LAST_SHARE, STILL_FALLING = 0.2, 1.1


@dataclasses.dataclass(frozen=True)
class Edge:
    """n*_L at ``level`` (None: no edge among the swept sizes) and the construction's count."""

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
    """(S,) the median over seeds (last dim) of the excess loss per size, as 10 ** median(log10 e)
    (an even number of seeds: the geometric mean of the two middle ones); e <= 0 counts as FLOOR."""
    E = np.maximum(np.asarray(excess, dtype=np.float64), FLOOR)
    return 10 ** np.median(np.log10(E), axis=-1)


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


def edge_interval(
    sizes, excess, level: float, *, draws: int = DRAWS, seed: int = BOOT_SEED
) -> tuple[int, int | None]:
    """The 95% bootstrap interval (lo, hi) of n*_L over the R seeds of ``excess`` (S, R), as swept
    sizes (the grid adds its own uncertainty: an edge at n* lies between the size below and n*).
    ``hi`` None: more than 2.5% of the draws have no edge (open above); ``lo`` None only when
    all lack one."""
    sizes, E = _check(sizes, excess)
    R = E.shape[1]
    g = np.random.default_rng(seed)
    picks = g.integers(0, R, size=(draws, R))
    med = median_excess(E[:, picks]).T  # (draws, S)
    ok = np.flip(np.cumprod(np.flip(med <= level, axis=1), axis=1), axis=1).astype(bool)
    first = np.where(ok.any(axis=1), ok.argmax(axis=1), len(sizes))  # len: no edge
    ends = (int(np.quantile(first, q, method=m)) for q, m in ((0.025, "lower"), (0.975, "higher")))
    return tuple(None if i >= len(sizes) else int(sizes[i]) for i in ends)


def still_learning(
    loss_steps, losses, final_excess, level: float, steps: int, *, floor: float = 0.0
) -> np.ndarray:
    """(R,) bool: members above ``level`` at the end whose training loss (K logged steps, R) still
    fell by more than STILL_FALLING times over the last LAST_SHARE of ``steps`` (median over the
    last 5% of the steps against the 5% ending LAST_SHARE before); ``floor``, a loss no network
    can go below (Fig. 3C: one optimal GD step's), is taken off both medians."""
    t = np.asarray(loss_steps, dtype=np.float64)
    L = np.asarray(losses, dtype=np.float64)
    e = np.asarray(final_excess, dtype=np.float64)
    if L.ndim != 2 or L.shape[0] != t.shape[0] or L.shape[1] != e.shape[0]:
        raise ValueError(f"losses must be (K={t.shape[0]}, R={e.shape[0]}), got {L.shape}")
    window = 0.05 * steps
    late = t > steps - window
    early = (t > steps * (1 - LAST_SHARE) - window) & (t <= steps * (1 - LAST_SHARE))
    if not late.any() or not early.any():
        raise ValueError(f"the losses are not logged often enough over {steps} steps to tell")
    before, after = np.median(L[early], axis=0) - floor, np.median(L[late], axis=0) - floor
    fell = before > STILL_FALLING * np.maximum(after, 0.0)
    return fell & (e > level)
