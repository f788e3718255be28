"""Fig. 3A-C's scorecard values: what a chapter hands to ``report.scorecard.record`` for each
row of a sweep (``fig3_edges.Sweep``), the premise of a row at our settings, Fig. 3A's
recorded settings and the size trained in both modes (fast, compiled)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from .. import experiments
from ..analysis.loss_edge import CENTRAL_LEVEL
from ..experiments.robustness import FINE, VARIANTS
from .fig3_edges import PREFIX, Sweep, read

#: the row of each level ("" is the central row)
ROW_LEVELS = {1e-2: "_at_1e-2", CENTRAL_LEVEL: "", 1e-6: "_at_1e-6"}
#: the setting of Fig. 3A/B's main sweeps (ours), whose edge Fig. 3A's variants test
OURS = "lr 1e-2, wd 1e-4"
#: the claim's pass band for n*/count (paper_values.json, fig3a.edge: sqrt 2 to 2 sqrt 2)
BAND = (1.414, 2.828)


@dataclasses.dataclass(frozen=True)
class ScoreRow:
    """One scorecard row as ``report.scorecard.record``'s keywords; ``run``: "" for this build's."""

    id: str
    ours: float
    seeds: int | None = None
    note: str = ""
    run: str = ""
    interval: tuple | None = None


def _interval_note(s: Sweep) -> str:
    """How many students were still learning at the end, over every size and seed, if any."""
    still = 0 if s.still is None else int(s.still.sum())
    return f"; {still} students still learning at the end" if still else ""


def _x(v: float) -> str:
    return "none" if not np.isfinite(v) else f"{v:.2f}x"


def settings_premise(s: Sweep, runs: dict[str, Sweep]) -> str:
    """The premise note of a Fig. 3A/B sweep at ``OURS``: "premise fails" where Fig. 3A's recorded
    settings (``runs``, ``largest``), each as far as its 95% interval reaches (open: every size
    above), put the edge both inside ``BAND`` and outside it, so that our unstated rate and weight
    decay, or the seeds, decide the row; else "" (also for Fig. 3C and other settings)."""
    if s.panel == "C" or s.setting != OURS:
        return ""
    inside, outside, said = [], [], []
    for k, r in runs.items():
        if k[0] != "A":
            continue
        lo, hi = r.interval()
        lo = BAND[1] * 2 if lo is None else lo  # no edge in any draw: above every size
        hi = np.inf if hi is None else hi
        if hi >= BAND[0] and lo <= BAND[1]:
            inside.append(r.setting)
        if lo < BAND[0] or hi > BAND[1]:
            outside.append(r.setting)
        said.append(f"{_x(r.edges()[CENTRAL_LEVEL].ratio)} [{_x(lo)}, {_x(hi)}] with {r.setting}")
    if not inside or not outside:
        return ""
    return (
        "premise fails: the edge depends on our settings, which the paper does not state, "
        f"within the seeds' intervals (Fig. 3A at the CPU budget: {'; '.join(said)})"
    )


def edge_rows(s: Sweep, premise: str = "") -> list[ScoreRow]:
    """``fig3<p>.edge`` (central, bootstrap interval), ``..._at_1e-2`` and ``_at_1e-6``: n*_L /
    count (NaN: no edge); ``premise`` (``settings_premise``) leads the central note."""
    out = []
    for L, e in s.edges().items():
        note = f"n* = {e.estimate}" if e.estimate is not None else "no edge among the sizes"
        central = L == CENTRAL_LEVEL
        if central and premise:
            note = f"{premise}; {note}"
        out.append(
            ScoreRow(
                f"{s.claim}.edge{ROW_LEVELS[L]}",
                e.ratio,
                seeds=s.seeds,
                note=f"{note} (sizes {s.sizes.min()}-{s.sizes.max()})"
                + (_interval_note(s) if central else ""),
                run=s.run,
                interval=s.interval(L) if central else None,
            )
        )
    return out


def robust_rows(s: Sweep, row: str) -> list[ScoreRow]:
    """The row ``fig3.robust.<row>`` (``<variant>[-fine]``) of a recorded setting of Fig. 3A: n*/14
    at the central level with its bootstrap interval. ValueError: not such a row."""
    variant = row.removesuffix("-fine")
    if variant not in VARIANTS or s.panel != "A" or (row != variant and variant not in FINE):
        raise ValueError(f"not a row of Fig. 3A's settings: {row!r} (panel {s.panel})")
    e = s.edges()[CENTRAL_LEVEL]
    return [
        ScoreRow(
            f"fig3.robust.{row}",
            e.ratio,
            seeds=s.seeds,
            note=f"n* = {e.estimate}; {VARIANTS[variant]}" + _interval_note(s),
            run=s.run.split(" + ")[-1],
            interval=s.interval(),
        )
    ]


def robust_all(runs: dict[str, Sweep]) -> list[tuple[str, Sweep | None, list[ScoreRow]]]:
    """(variant, its sweep or None, its rows) per variant of Fig. 3A in ``runs`` (``largest``); one
    merged with a fine sweep has the coarse run's row and the merged ``<v>-fine`` row."""
    out = []
    for v in VARIANTS:
        s = runs.get(f"A-{v}")
        if s is None:
            out.append((v, None, []))
            continue
        if " + " in s.run:  # merged: the coarse run's own row, then the fine one
            rows = robust_rows(read(s.run.split(" + ")[0]), v)
            rows += robust_rows(s, f"{v}-fine")
        else:
            rows = robust_rows(s, v)
        out.append((v, s, rows))
    return out


@dataclasses.dataclass(frozen=True)
class ModeRow:
    """Size ``n`` of a variant trained in mode fast (coarse run) and compiled (fine sweep): each
    seed's excess loss in both; ``same``: seeds on the same side of the central level."""

    variant: str
    n: int
    fast: tuple[float, ...]
    compiled: tuple[float, ...]
    same: int
    seeds: int


def mode_rows(variants: Sequence[str] = FINE) -> list[ModeRow]:
    """A ``ModeRow`` per size of ``variants`` recorded both ways (fast and compiled)."""
    names = set(experiments.recorded_names())
    out = []
    for v in variants:
        coarse, fine = f"{PREFIX['A']}cpu-{v}", f"{PREFIX['A']}cpu-{v}-fine"
        if not {coarse, fine} <= names:
            continue
        a, b = read(coarse), read(fine)
        for n in sorted(set(a.sizes.tolist()) & set(b.sizes.tolist())):
            ea, eb = a.excess[a.sizes == n][0], b.excess[b.sizes == n][0]
            same = int(((ea <= CENTRAL_LEVEL) == (eb <= CENTRAL_LEVEL)).sum())
            out.append(
                ModeRow(v, int(n), tuple(map(float, ea)), tuple(map(float, eb)), same, len(ea))
            )
    return out
