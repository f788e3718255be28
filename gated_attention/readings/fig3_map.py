"""Fig. 3's finding as rows: the loss edge per panel and per setting of ours, with its interval
over seeds, its budget as a share of the paper's steps x T and how many students were still
learning (the sweeps: ``fig3_edges.largest``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..analysis.loss_edge import CENTRAL_LEVEL
from .fig3_edges import SETTINGS, Sweep


@dataclasses.dataclass(frozen=True)
class EdgeRow:
    """A panel at one of our settings: n*/count at the central level with its bootstrap interval
    over seeds, and students still learning (of ``students``; None: not known)."""

    panel: str
    setting: str
    run: str
    share: float  # steps x T over the paper's
    seeds: int
    sizes: tuple[int, ...]
    ratio: float  # NaN: no edge among the sizes
    interval: tuple[float | None, float | None]
    still: int | None
    students: int


def finding_rows(runs: dict[str, Sweep], paper: dict[str, dict]) -> list[EdgeRow]:
    """The finding's rows in ``SETTINGS`` order; ``paper``: claim id -> {"steps", "T"}."""
    return [
        EdgeRow(
            s.panel,
            s.setting,
            s.run,
            s.share(paper[s.claim]),
            s.seeds,
            tuple(int(n) for n in s.sizes),
            s.edges()[CENTRAL_LEVEL].ratio,
            s.interval(),
            None if s.still is None else int(s.still.sum()),
            s.seeds * len(s.sizes),
        )
        for s in [runs[key] for key in SETTINGS if key in runs]
    ]


def span(rows: list[EdgeRow], panel: str) -> tuple[float, float]:
    """The lowest and highest n*/count of ``panel``'s rows (NaN where none has an edge)."""
    r = [x.ratio for x in rows if x.panel == panel and np.isfinite(x.ratio)]
    return (min(r), max(r)) if r else (float("nan"), float("nan"))


@dataclasses.dataclass(frozen=True)
class Finding:
    """The numbers of the finding's sentence: ``ab_*`` over Fig. 3A/B's rows (share of the paper's
    budget in per cent, n*/count); ``a_reach``: the highest upper end of Fig. 3A's intervals (None:
    one is open); ``c_*``: Fig. 3C's n*/count and its upper end; setting -> Fig. 3A's n*/count."""

    ab_share: tuple[int, int]
    ab_lo: float
    ab_hi: float
    a_reach: float | None
    c_ratio: float
    c_hi: float | None
    a_settings: dict[str, float]


def finding(rows: list[EdgeRow]) -> Finding:
    """The numbers the finding's sentence glues, from ``finding_rows``."""
    ab = [r for r in rows if r.panel in "AB"]
    shares = sorted({round(100 * r.share) for r in ab})
    highs = [r.interval[1] for r in rows if r.panel == "A"]
    c = next(r for r in rows if r.panel == "C")
    return Finding(
        (shares[0], shares[-1]),
        min(r.ratio for r in ab),
        max(r.ratio for r in ab),
        None if None in highs else max(highs),
        c.ratio,
        c.interval[1],
        {r.setting: r.ratio for r in rows if r.panel == "A"},
    )
