"""Fig. 3A-C read one way: the loss edge of every sweep at the levels of ``analysis.loss_edge``,
with its interval over seeds and whether its students were still learning; its scorecard rows,
its figure, and the one table the book's Fig. 3 finding rests on.

    Sweep            one finished sweep: sizes, excess losses (sizes, seeds), budget, setting
    from_teacher     a Fig. 3A/B sweep (a teacher-student size sweep) -> Sweep
    from_regression  a Fig. 3C sweep (an in-context regression run) -> Sweep
    merge            a coarse sweep and its fine sweep (same seeds) -> one Sweep
    mode_check       the size trained in both modes (fast, compiled), seed by seed
    edge_lines       its median excess loss per size and the edge at each level, as lines
    edge_records     its three rows: ``fig3<p>.edge`` (central) and the two other levels
    settings_premise whether our unstated settings decide a Fig. 3A/B row (its premise)
    robust_records   the row ``fig3.robust.<variant>`` of a recorded variant of Fig. 3A
    robust_all       every variant's sweep and rows (with its fine sweep where recorded)
    plot_edges       every seed's excess loss against n, the median, the levels (edge_plots)
    largest          the largest recorded sweep of each panel and of each setting of Fig. 3A
    SETTINGS         the keys of ``largest`` in the order of the finding's table (``fig3_map``)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import experiments
from ..analysis.loss_edge import (
    CENTRAL_LEVEL,
    Edge,
    edge_interval,
    edges,
    median_excess,
    still_learning,
)
from ..experiments.robustness import FINE, VARIANTS
from ..tasks import regression
from . import scorecard, verdict
from .budget_text import _claims
from .edge_plots import plot_edges

__all__ = [
    "Sweep",
    "from_teacher",
    "from_regression",
    "merge",
    "mode_check",
    "robust_all",
    "edge_lines",
    "edge_records",
    "settings_premise",
    "robust_records",
    "plot_edges",
    "largest",
    "CONSTRUCTION",
    "ROW_LEVELS",
    "SETTINGS",
]

#: the construction's neuron count per panel (App. A.3, A.4; the previous chapter for C)
CONSTRUCTION = {"A": 14, "B": 42, "C": 12}
#: the row of each level ("" is the central row)
ROW_LEVELS = {1e-2: "_at_1e-2", CENTRAL_LEVEL: "", 1e-6: "_at_1e-6"}
#: the recorded runs' name prefix per panel
PREFIX = {"A": "how-many-neurons-A-", "B": "how-many-neurons-B-", "C": "in-context-regression-"}
#: the keys of ``largest`` in the order of the finding's table
SETTINGS = ("A", "A-wd", "A-lr", "A-lr-wd", "A-teacher", "B", "C")
_CLAIM = {"A": "fig3a", "B": "fig3b", "C": "fig3c"}


@dataclasses.dataclass(frozen=True)
class Sweep:
    """One finished sweep of panel ``panel``: ``excess`` (S, R) at ``sizes`` (S,), trained
    ``steps`` steps at ``T`` (``T`` None: the task's own length); ``still`` (S,) how many seeds
    of each size were still learning at the end (``analysis.loss_edge.still_learning``; None:
    not known); ``runs`` the recorded runs read (empty: this build's own)."""

    panel: str  # "A", "B" or "C"
    sizes: np.ndarray
    excess: np.ndarray
    steps: int
    T: int | None
    run: str = ""  # the recorded run's name (several: joined by " + "), or "" for this build's
    still: np.ndarray | None = None
    setting: str = ""  # the settings of ours it was trained with, in words (``_setting``)

    @property
    def construction(self) -> int:
        return CONSTRUCTION[self.panel]

    @property
    def seeds(self) -> int:
        return self.excess.shape[1]

    @property
    def spent(self) -> int:
        """Steps x T: which of two sweeps of a panel had the larger budget."""
        return self.steps * (self.T or 1)

    def share(self) -> float:
        """Steps x T over the paper's steps x T for this panel."""
        paper = _claims()[_CLAIM[self.panel]]["paper_budget"]
        return self.steps * (self.T or paper["T"]) / (paper["steps"] * paper["T"])

    def edges(self) -> dict[float, Edge]:
        """n*_L at every level of ``analysis.LEVELS``."""
        return edges(self.sizes, self.excess, self.construction)

    def interval(self, level: float = CENTRAL_LEVEL) -> tuple[float | None, float | None]:
        """The 95% bootstrap interval over seeds of n*_L / the construction's count (None
        above: no edge among the sizes in more than 2.5% of the draws)."""
        lo, hi = edge_interval(self.sizes, self.excess, level)
        return tuple(None if v is None else v / self.construction for v in (lo, hi))

    def budget(self) -> str:
        return verdict.budget(
            f"fig3{self.panel.lower()}", steps=self.steps, T=self.T, seeds=self.seeds
        )


def _still(run: Any, sizes, members, excess, level: float, floor: float = 0.0):
    """(S,) seeds of each size still learning at the end (None: its losses are logged too
    sparsely to tell, as in the smoke profile); ``members`` (E,) each member's size,
    ``excess`` (E,) its excess loss, in the entry's member order."""
    T = run.tensors
    if "loss_steps" not in T or "losses" not in T:
        return None
    try:
        flags = still_learning(
            T["loss_steps"].numpy(),
            T["losses"].numpy(),
            excess,
            level,
            run.config.train.steps,
            floor=floor,
        )
    except ValueError:
        return None
    return np.array([int(flags[members == n].sum()) for n in sizes])


def _num(x: float) -> str:
    """0.001 -> '1e-3' (a power of ten), 0.07 -> '0.07'."""
    e = np.log10(x)
    return f"1e{int(round(e))}" if x > 0 and abs(e - round(e)) < 1e-9 else f"{x:g}"


def _setting(config: Any) -> str:
    """'lr 1e-3, wd 0.07' (and the teacher's scale where it is the task's default 1/d)."""
    words = f"lr {_num(config.train.lr)}, wd {_num(config.train.weight_decay)}"
    if getattr(config, "d", None) and getattr(config, "teacher_std", 0) is None:
        words += ", teacher variance 1/d"
    return words


def from_teacher(run: Any, name: str = "") -> Sweep:
    """Fig. 3A/B: the normalised held-out losses of a teacher-student size sweep (a results
    entry), MSE / Var(teacher output): the construction's loss is 0, predicting 0 is 1."""
    c = run.config
    sizes, L = experiments.normalised_losses(c, run.tensors["eval_loss"])
    panel = {4: "A", 12: "B"}[c.d]
    members = np.repeat(sizes, L.shape[1])  # sizes outer, seeds inner
    still = _still(run, sizes, members, L.reshape(-1), CENTRAL_LEVEL)
    return Sweep(panel, sizes, L, c.train.steps, c.T, name, still, _setting(c))


def from_regression(run: Any, name: str = "") -> Sweep:
    """Fig. 3C: each network's paired gap to one optimal GD step over the gap between
    predicting 0 and that step, ``regression.ZERO_LOSS - regression.GD_MIN_LOSS``: the
    construction's (GD's) loss is 0, predicting 0 is 1."""
    T = run.tensors
    sizes = T["sizes"].numpy()
    sweep = np.array(sorted(set(sizes.tolist())))
    gap = T["eval_gap"].numpy() / (regression.ZERO_LOSS - regression.GD_MIN_LOSS)
    excess = np.stack([gap[sizes == n] for n in sweep])
    still = _still(run, sweep, sizes, gap, CENTRAL_LEVEL, floor=regression.GD_MIN_LOSS)
    c = run.config
    return Sweep("C", sweep, excess, c.train.steps, None, name, still, _setting(c))


def merge(coarse: Sweep, fine: Sweep) -> Sweep:
    """One sweep of ``coarse``'s sizes and ``fine``'s (the same panel, seeds, steps and T: the
    same teachers and data per seed); a size in both is read from ``coarse``."""
    if (coarse.panel, coarse.seeds, coarse.steps, coarse.T, coarse.setting) != (
        fine.panel,
        fine.seeds,
        fine.steps,
        fine.T,
        fine.setting,
    ):
        raise ValueError(f"cannot merge {coarse.run!r} and {fine.run!r}: not one setting's runs")
    extra = ~np.isin(fine.sizes, coarse.sizes)
    sizes = np.concatenate([coarse.sizes, fine.sizes[extra]])
    order = np.argsort(sizes)
    stack = lambda a, b: np.concatenate([a, b[extra]])[order]  # noqa: E731
    still = None
    if coarse.still is not None and fine.still is not None:
        still = stack(coarse.still, fine.still)
    return Sweep(
        coarse.panel,
        sizes[order],
        stack(coarse.excess, fine.excess),
        coarse.steps,
        coarse.T,
        f"{coarse.run} + {fine.run}",
        still,
        coarse.setting,
    )


def edge_lines(s: Sweep) -> str:
    """Per size: the median excess loss over seeds (min .. max) and the seeds still learning;
    then n* at each level."""
    med = median_excess(s.excess)
    lines = [f"  {s.seeds} seeds; excess loss, median over seeds (min .. max)"]
    still = s.still if s.still is not None else [None] * len(s.sizes)
    for n, m, row, k in zip(s.sizes, med, s.excess, still, strict=True):
        tail = f"; {k} still learning" if k else ""
        lines.append(f"  n = m = {n:4d}: {m:9.2e}  ({row.min():.1e} .. {row.max():.1e}){tail}")
    for L, e in s.edges().items():
        central = "  (central)" if L == CENTRAL_LEVEL else ""
        at = "none among the swept sizes" if e.estimate is None else f"{e.estimate}"
        ratio = "" if e.estimate is None else f" = {e.ratio:.2f} x {s.construction}"
        lines.append(f"  n* at {L:.0e}: {at}{ratio}{central}")
    return "\n".join(lines)


def _interval_note(s: Sweep) -> str:
    still = 0 if s.still is None else int(s.still.sum())
    return f"; {still} students still learning at the end" if still else ""


#: the setting of Fig. 3A/B's main sweeps (ours), whose edge Fig. 3A's variants test
OURS = "lr 1e-2, wd 1e-4"
#: the claim's pass band for n*/count (paper_values.json, fig3a.edge: sqrt 2 to 2 sqrt 2)
BAND = (1.414, 2.828)


def settings_premise(s: Sweep, runs: dict[str, Sweep]) -> str:
    """The premise note of a Fig. 3A/B sweep trained at our settings (``OURS``): "premise
    fails" when Fig. 3A's recorded settings (``runs``, from ``largest``) allow the edge both
    inside the band and outside it, each setting as far as its 95% interval over seeds reaches
    (an open interval reaches every size above), so that our unstated choice of rate and
    weight decay, or the seeds, decide the row; "" when they agree, for Fig. 3C, or for a
    sweep at another setting."""
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


def _x(v: float) -> str:
    return "none" if not np.isfinite(v) else f"{v:.2f}x"


def edge_records(s: Sweep, *, profile: str, premise: str = "") -> list:
    """The sweep's rows ``fig3<p>.edge`` (central, with its bootstrap interval over seeds) and
    ``fig3<p>.edge_at_1e-2``/``_1e-6``: n*_L over the construction's count (NaN: no edge);
    ``premise`` (``settings_premise``) goes first in the central row's note."""
    rid = f"fig3{s.panel.lower()}.edge"
    out = []
    for L, e in s.edges().items():
        note = f"n* = {e.estimate}" if e.estimate is not None else "no edge among the sizes"
        central = L == CENTRAL_LEVEL
        if central and premise:
            note = f"{premise}; {note}"
        out.append(
            scorecard.record(
                rid + ROW_LEVELS[L],
                e.ratio,
                profile=profile,
                seeds=s.seeds,
                note=f"{note} (sizes {s.sizes.min()}-{s.sizes.max()})"
                + (_interval_note(s) if central else ""),
                run=s.run,
                budget=s.budget(),
                interval=s.interval(L) if central else None,
            )
        )
    return out


def robust_records(s: Sweep, row: str) -> list:
    """The row ``fig3.robust.<row>`` (a variant, or ``<variant>-fine``) of a recorded setting of
    Fig. 3A: n*/14 at the central level, with its bootstrap interval over seeds."""
    variant = row.removesuffix("-fine")
    if variant not in VARIANTS or s.panel != "A" or (row != variant and variant not in FINE):
        raise ValueError(f"not a row of Fig. 3A's settings: {row!r} (panel {s.panel})")
    e = s.edges()[CENTRAL_LEVEL]
    budget = verdict.budget("fig3.robust", steps=s.steps, T=s.T, seeds=s.seeds)
    note = f"n* = {e.estimate}; {VARIANTS[variant]}" + _interval_note(s)
    return [
        scorecard.record(
            f"fig3.robust.{row}",
            e.ratio,
            profile="paper",
            seeds=s.seeds,
            note=note,
            run=s.run.split(" + ")[-1],
            budget=budget,
            interval=s.interval(),
        )
    ]


def robust_all(runs: dict[str, Sweep]) -> list[tuple[str, Sweep | None, list]]:
    """(what it changes, the sweep or None, its rows) for each variant of Fig. 3A in ``runs``
    (``largest``): a variant read with its fine sweep has two rows, its coarse run's own on
    that run's sizes (``fig3.robust.<v>``) and the merged one (``fig3.robust.<v>-fine``)."""
    out = []
    for v, what in VARIANTS.items():
        s = runs.get(f"A-{v}")
        if s is None:
            out.append((f"{what}: not recorded in this package yet", None, []))
            continue
        rows = []
        if " + " in s.run:  # merged: the coarse run's own row, then the fine one
            rows = robust_records(_read(s.run.split(" + ")[0]), v)
            rows += robust_records(s, f"{v}-fine")
        else:
            rows = robust_records(s, v)
        out.append((what, s, rows))
    return out


def mode_check(variants: Sequence[str]) -> str:
    """Size 20 trained twice, in mode fast (the coarse run) and compiled (the fine sweep), for
    each variant in ``variants`` recorded both ways: each seed's excess loss in both and how
    many seeds fall on the same side of the central level."""
    names = set(experiments.recorded_names())
    lines = []
    for v in variants:
        coarse, fine = f"{PREFIX['A']}cpu-{v}", f"{PREFIX['A']}cpu-{v}-fine"
        if not {coarse, fine} <= names:
            lines.append(f"{VARIANTS[v]}: the fine sweep is not recorded in this package yet")
            continue
        a, b = _read(coarse), _read(fine)
        both = sorted(set(a.sizes.tolist()) & set(b.sizes.tolist()))
        for n in both:
            ea, eb = a.excess[a.sizes == n][0], b.excess[b.sizes == n][0]
            same = int(((ea <= CENTRAL_LEVEL) == (eb <= CENTRAL_LEVEL)).sum())
            pairs = ", ".join(f"{x:.1e}/{y:.1e}" for x, y in zip(ea, eb, strict=True))
            lines.append(
                f"{VARIANTS[v]}, n = {n}, fast/compiled per seed: {pairs}; "
                f"{same} of {len(ea)} seeds on the same side of {CENTRAL_LEVEL:.0e}"
            )
    return "\n".join(lines)


def _read(name: str) -> Sweep:
    run = experiments.recorded(name)
    if name.startswith(PREFIX["C"]):
        return from_regression(run, name)
    return from_teacher(run, name)


def _key(name: str) -> str | None:
    """The key of a recorded run in ``largest``: "A", "B", "C", "A-<variant>" (a fine sweep:
    "A-<variant>-fine"), or None."""
    for v in sorted(VARIANTS, key=len, reverse=True):
        for tail, key in ((f"-{v}-fine", f"A-{v}-fine"), (f"-{v}", f"A-{v}")):
            if name == f"{PREFIX['A']}cpu{tail}":
                return key
    return next((p for p, pre in PREFIX.items() if name.startswith(pre)), None)


def largest() -> dict[str, Sweep]:
    """The largest recorded sweep (steps x T) of each panel, "A", "B", "C", and of each setting
    of Fig. 3A ("A-wd", ...: the recorded ``how-many-neurons-A-cpu-<variant>``), each read
    together with its fine sweep where one is recorded (``merge``)."""
    out: dict[str, Sweep] = {}
    for name in experiments.recorded_names():
        key = _key(name)
        if key is None:
            continue
        s = _read(name)
        if key not in out or s.spent > out[key].spent:
            out[key] = s
    for v in FINE:
        fine = out.pop(f"A-{v}-fine", None)
        if fine is not None and f"A-{v}" in out:
            out[f"A-{v}"] = merge(out[f"A-{v}"], fine)
    return out
