"""Fig. 3A-C read one way: the loss edge of every sweep at the levels of ``analysis.loss_edge``,
its scorecard rows, its figure, and the one finding the book states about it.

    Sweep            one finished sweep as (sizes, excess losses (sizes, seeds)), its budget
    from_teacher     a Fig. 3A/B sweep (a teacher-student size sweep) -> Sweep
    from_regression  a Fig. 3C sweep (an in-context regression run) -> Sweep
    edge_lines       its median excess loss per size and the edge at each level, as lines
    edge_records     its three rows: ``fig3<p>.edge`` (central) and the two other levels
    robust_records   the row ``fig3.robust.<variant>`` of a recorded variant of Fig. 3A
    plot_edges       every seed's excess loss against n, the median, the levels
    largest          the largest recorded sweep of each panel (and of each variant)
    finding          the finding, in one paragraph: the same in every chapter that states it
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from .. import experiments
from ..analysis.loss_edge import CENTRAL_LEVEL, FLOOR, LEVELS, Edge, edges, median_excess
from ..experiments.robustness import VARIANTS
from ..tasks import regression
from . import scorecard, verdict

__all__ = [
    "Sweep",
    "from_teacher",
    "from_regression",
    "edge_lines",
    "edge_records",
    "robust_records",
    "plot_edges",
    "largest",
    "finding",
    "CONSTRUCTION",
    "ROW_LEVELS",
]

#: the construction's neuron count per panel (App. A.3, A.4; the previous chapter for C)
CONSTRUCTION = {"A": 14, "B": 42, "C": 12}
#: the row of each level ("" is the central row)
ROW_LEVELS = {1e-2: "_at_1e-2", CENTRAL_LEVEL: "", 1e-6: "_at_1e-6"}
#: the recorded runs' name prefix per panel
PREFIX = {"A": "how-many-neurons-A-", "B": "how-many-neurons-B-", "C": "in-context-regression-"}


@dataclasses.dataclass(frozen=True)
class Sweep:
    """One finished sweep of panel ``panel``: ``excess`` (S, R) at ``sizes`` (S,), trained
    ``steps`` steps at ``T`` (``T`` None: the task's own length)."""

    panel: str  # "A", "B" or "C"
    sizes: np.ndarray
    excess: np.ndarray
    steps: int
    T: int | None
    run: str = ""  # the recorded run's name, or "" for this build's own

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

    def edges(self) -> dict[float, Edge]:
        """n*_L at every level of ``analysis.LEVELS``."""
        return edges(self.sizes, self.excess, self.construction)

    def budget(self) -> str:
        return verdict.budget(
            f"fig3{self.panel.lower()}", steps=self.steps, T=self.T, seeds=self.seeds
        )


def from_teacher(run: Any, name: str = "") -> Sweep:
    """Fig. 3A/B: the normalised held-out losses of a teacher-student size sweep (a results
    entry), MSE / Var(teacher output): the construction's loss is 0, predicting 0 is 1."""
    c = run.config
    sizes, L = experiments.normalised_losses(c, run.tensors["eval_loss"])
    panel = {4: "A", 12: "B"}[c.d]
    return Sweep(panel, sizes, L, c.train.steps, c.T, name)


def from_regression(run: Any, name: str = "") -> Sweep:
    """Fig. 3C: each network's paired gap to one optimal GD step over the gap between
    predicting 0 and that step, ``regression.ZERO_LOSS - regression.GD_MIN_LOSS``: the
    construction's (GD's) loss is 0, predicting 0 is 1."""
    T = run.tensors
    sizes = T["sizes"].numpy()
    sweep = np.array(sorted(set(sizes.tolist())))
    gap = T["eval_gap"].numpy() / (regression.ZERO_LOSS - regression.GD_MIN_LOSS)
    excess = np.stack([gap[sizes == n] for n in sweep])
    return Sweep("C", sweep, excess, run.config.train.steps, None, name)


def edge_lines(s: Sweep) -> str:
    """Per size: the median excess loss over seeds (min .. max); then n* at each level."""
    med = median_excess(s.excess)
    lines = [f"  {s.seeds} seeds; excess loss, median over seeds (min .. max)"]
    for n, m, row in zip(s.sizes, med, s.excess, strict=True):
        lines.append(f"  n = m = {n:4d}: {m:9.2e}  ({row.min():.1e} .. {row.max():.1e})")
    for L, e in s.edges().items():
        central = "  (central)" if L == CENTRAL_LEVEL else ""
        at = "none among the swept sizes" if e.estimate is None else f"{e.estimate}"
        ratio = "" if e.estimate is None else f" = {e.ratio:.2f} x {s.construction}"
        lines.append(f"  n* at {L:.0e}: {at}{ratio}{central}")
    return "\n".join(lines)


def edge_records(s: Sweep, *, profile: str) -> list:
    """The sweep's rows ``fig3<p>.edge`` (central) and ``fig3<p>.edge_at_1e-2``/``_1e-6``:
    n*_L over the construction's count (NaN: no edge)."""
    rid = f"fig3{s.panel.lower()}.edge"
    out = []
    for L, e in s.edges().items():
        note = f"n* = {e.estimate}" if e.estimate is not None else "no edge among the sizes"
        out.append(
            scorecard.record(
                rid + ROW_LEVELS[L],
                e.ratio,
                profile=profile,
                seeds=s.seeds,
                note=f"{note} (sizes {s.sizes.min()}-{s.sizes.max()})",
                run=s.run,
                budget=s.budget(),
            )
        )
    return out


def robust_records(s: Sweep, variant: str) -> list:
    """The row ``fig3.robust.<variant>`` of the recorded variant ``s`` of Fig. 3A: n*/14 at
    the central level."""
    if variant not in VARIANTS or s.panel != "A":
        raise ValueError(f"not a variant of Fig. 3A: {variant!r} (panel {s.panel})")
    e = s.edges()[CENTRAL_LEVEL]
    budget = verdict.budget("fig3.robust", steps=s.steps, T=s.T, seeds=s.seeds)
    note = f"n* = {e.estimate}; {VARIANTS[variant]}"
    return [
        scorecard.record(
            f"fig3.robust.{variant}",
            e.ratio,
            profile="paper",
            seeds=s.seeds,
            note=note,
            run=s.run,
            budget=budget,
        )
    ]


def plot_edges(sweeps: Sequence[Sweep], titles: Sequence[str], ncols: int = 3) -> plt.Figure:
    """Every seed's excess loss against n = m (thin lines), their median (points and line), the
    levels of the edge (the central one solid), the construction's count and twice it."""
    ncols = min(ncols, len(sweeps))
    nrows = -(-len(sweeps) // ncols)
    fig, grid = plt.subplots(
        nrows, ncols, figsize=(7.5, 0.8 + 2.9 * nrows), layout="constrained", squeeze=False
    )
    for ax in grid.ravel()[len(sweeps) :]:
        ax.set_visible(False)
    for ax, s, title in zip(grid.ravel(), sweeps, titles, strict=False):
        E = np.maximum(s.excess, FLOOR)
        for r in range(s.seeds):
            ax.plot(s.sizes, E[:, r], color="0.65", lw=0.8, label="each seed" if r == 0 else None)
        ax.plot(s.sizes, median_excess(s.excess), "o-", color="C0", label="median over seeds")
        for L in LEVELS:
            central = L == CENTRAL_LEVEL
            ax.axhline(
                L,
                color="C3",
                lw=1.2 if central else 0.7,
                ls="-" if central else ":",
                label="central level" if central else ("other levels" if L == LEVELS[0] else None),
            )
        k = s.construction
        ax.axvline(k, color="k", ls=":", lw=1, label="construction's count")
        ax.axvline(2 * k, color="k", ls="--", lw=1, label="twice it (the paper's edge)")
        ax.set_yscale("log")
        ax.set_xlabel("n = m")
        ax.set_title(title, fontsize=9)
    for ax in grid[:, 0]:
        ax.set_ylabel("excess loss")
    handles, labels = grid.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8)
    return fig


def _read(name: str) -> Sweep:
    run = experiments.recorded(name)
    if name.startswith(PREFIX["C"]):
        return from_regression(run, name)
    return from_teacher(run, name)


def largest() -> dict[str, Sweep]:
    """The largest recorded sweep (steps x T) of each panel, "A", "B", "C", and of each
    variant of Fig. 3A ("A-wd", ...: the recorded ``how-many-neurons-A-cpu-<variant>``)."""
    out: dict[str, Sweep] = {}
    variants = {f"how-many-neurons-A-cpu-{v}": f"A-{v}" for v in VARIANTS}
    for name in experiments.recorded_names():
        key = variants.get(name)
        if key is None:
            key = next((p for p, pre in PREFIX.items() if name.startswith(pre)), None)
        if key is None:
            continue
        s = _read(name)
        if key not in out or s.spent > out[key].spent:
            out[key] = s
    return out


def _level(L: float) -> str:
    """1e-04 -> '1e-4'."""
    m, e = f"{L:.0e}".split("e")
    return f"{m}e{int(e)}"


def _edge_text(s: Sweep, level: float = CENTRAL_LEVEL) -> str:
    e = s.edges()[level]
    return "none" if e.estimate is None else f"{e.estimate} ({e.ratio:.2f}x)"


def _unconverged(s: Sweep) -> str:
    """A note when the sweep may not have converged: the median excess loss at the largest size
    above that at the size before it (a larger network that fits worse)."""
    med = median_excess(s.excess)
    if len(med) < 2 or med[-1] <= med[-2]:
        return ""
    return (
        f"; its median at n = {int(s.sizes[-1])} ({med[-1]:.1e}) is above that at "
        f"n = {int(s.sizes[-2])} ({med[-2]:.1e}), so its students may not have converged at "
        "this budget"
    )


def finding(runs: dict[str, Sweep] | None = None) -> str:
    """The book's one finding on Fig. 3A-C (markdown), from the largest recorded sweep of each
    panel and the recorded variants of Fig. 3A (``largest``): the edge at the central level
    against the paper's ~2x, at the other levels, under our choices changed, and caveats."""
    runs = largest() if runs is None else runs
    panels = [p for p in "ABC" if p in runs]
    if not panels:
        return "No sweep of Fig. 3 is recorded in this package yet."
    ratios = [runs[p].edges()[CENTRAL_LEVEL].ratio for p in panels]
    if all(np.isfinite(r) and r < 2**0.5 for r in ratios):
        head = "at the construction's count or just above it, not at about twice it"
    elif all(np.isfinite(r) and 2**0.5 <= r <= 2**1.5 for r in ratios):
        head = "at about twice the construction's count, as the paper finds"
    else:
        head = "at no one multiple of the construction's count across the panels"
    low, high = (L for L in LEVELS if L != CENTRAL_LEVEL)
    rows = [
        f"| panel | neurons | n* at {_level(CENTRAL_LEVEL)} (central) | at {_level(low)} "
        f"| at {_level(high)} |",
        "|---|---|---|---|---|",
    ]
    for p in panels:
        s = runs[p]
        rows.append(
            f"| Fig. 3{p} | {s.construction} | **{_edge_text(s)}** | {_edge_text(s, low)} | "
            f"{_edge_text(s, high)} |"
        )
    where = "; ".join(f"Fig. 3{p} from `{runs[p].run}` ({runs[p].budget()})" for p in panels)
    robust = _robustness_text(runs)
    return (
        f"**One finding for Fig. 3, one rule for its three panels.** At the largest budget "
        f"recorded, the loss edge (the smallest size from which the median excess loss over "
        f"seeds stays at most {_level(CENTRAL_LEVEL)}) lies {head}:\n\n"
        + "\n".join(rows)
        + f"\n\nRecorded runs: {where}. {robust} Caveats: each n* is read at its run's "
        f"budget, a share of the paper's steps; n* is a size of the grid (the edge lies "
        f"between the size below it and n*); the paper gives neither its learning rate "
        f"nor its teacher's scale, so ours are choices."
    )


def _robustness_text(runs: dict[str, Sweep]) -> str:
    """``finding``'s sentence on Fig. 3A with one of our choices changed (the recorded
    variants ``A-<variant>`` of ``runs``): where the 1x edge holds, where it moves up, and
    which variants are not recorded."""
    variants = [v for v in VARIANTS if f"A-{v}" in runs]
    if not variants:
        return "Whether it survives our choices changed is not recorded yet."
    ratio = {v: runs[f"A-{v}"].edges()[CENTRAL_LEVEL].ratio for v in variants}
    bound = {v: scorecard.paper_values()[f"fig3.robust.{v}"]["tolerance"] for v in variants}
    holds = [v for v in variants if np.isfinite(ratio[v]) and ratio[v] <= bound[v]]
    moves = [v for v in variants if v not in holds]
    said = []
    if holds:
        said.append(
            "the 1x edge holds with "
            + " and with ".join(f"{VARIANTS[v]} (n* = {_edge_text(runs[f'A-{v}'])})" for v in holds)
        )
    if moves:
        said.append(
            "it moves up with "
            + " and with ".join(
                f"{VARIANTS[v]} (n* = {_edge_text(runs[f'A-{v}'])}{_unconverged(runs[f'A-{v}'])})"
                for v in moves
            )
        )
    robust = (
        "Fig. 3A with one of our choices changed, at the same budget (sizes 8-28): "
        + ", and ".join(said)
        + "."
    )
    absent = [VARIANTS[v] for v in VARIANTS if v not in variants]
    if absent:
        robust += " Not recorded yet: " + "; ".join(absent) + "."
    return robust
