"""Fig. 2's surplus against the training budget: the same quick config trained at 1, 2, 4 and 8
times its steps (``experiments.cpu_budget.LADDER``), each rung a complete run, read member by
member (``members.member_rows``) and scored with Fig. 2's criteria.

    Rung          one budget: its name, steps, the rows of its members
    ladder_table  per rung: steps, each seed's hidden neurons after pruning, the mean surplus
                  over the construction's 14, how many seeds prune to 14 and learned it
    plot_surplus  each seed's surplus against the steps (log 2), the mean as a line
    fig2_records  a rung's Fig. 2 rows: the first seed's counts, the fractions, the merges
    read_ladder   this build's rung and every recorded rung, each recorded one scored
    LADDER_RUNS   the recorded rungs, 2, 4 and 8 times the quick steps
    sensitivity_text  the member table of each recorded learning-rate / weight-decay setting
"""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import numpy as np

from . import scorecard, verdict
from .members import CONSTRUCTION, MemberRow, fractions, held_out_values

__all__ = [
    "Rung",
    "ladder_table",
    "plot_surplus",
    "fig2_records",
    "held_out_records",
    "read_ladder",
    "sensitivity_text",
    "LADDER_RUNS",
]

#: the recorded rungs of the ladder (``experiments.cpu_budget``): 2, 4 and 8 times the steps
LADDER_RUNS = tuple(f"teacher-identification-cpu{s}" for s in ("-x2", "-x4", ""))


@dataclasses.dataclass(frozen=True)
class Rung:
    """One budget of the ladder: ``name`` (this build, or the recorded run's), ``steps``, ``T``
    and the reverse-engineered members."""

    name: str
    steps: int
    T: int
    rows: tuple[MemberRow, ...]

    @property
    def surplus(self) -> np.ndarray:
        """(seeds,) hidden neurons after pruning beyond the construction's 14."""
        return np.array([r.hidden - CONSTRUCTION[0] for r in self.rows])


def ladder_table(rungs: list[Rung]) -> str:
    """One line per rung, in order of steps."""
    lines = [f"{'steps':>9}  {'hidden after pruning, per seed':<32} {'surplus':>7}  14s  learned"]
    for g in sorted(rungs, key=lambda g: g.steps):
        hidden = " ".join(f"{r.hidden:3d}" for r in g.rows)
        at14 = sum(r.counts == CONSTRUCTION for r in g.rows)
        learned = sum(r.learned for r in g.rows)
        R = len(g.rows)
        lines.append(
            f"{g.steps:9,}  {hidden:<32} {g.surplus.mean():7.1f}  {at14}/{R}  {learned}/{R}"
            f"   {g.name}"
        )
    return "\n".join(lines)


def plot_surplus(rungs: list[Rung]) -> plt.Figure:
    """Each seed's surplus (grey) and the mean over seeds (line) against the steps, log 2."""
    rungs = sorted(rungs, key=lambda g: g.steps)
    fig, ax = plt.subplots(figsize=(6.0, 3.9), layout="constrained")
    for g in rungs:
        ax.plot([g.steps] * len(g.rows), g.surplus, ".", color="0.6")
    ax.plot([g.steps for g in rungs], [g.surplus.mean() for g in rungs], "o-", label="mean")
    ax.axhline(0, color="k", ls=":", label="the construction (no surplus)")
    ax.set_xscale("log", base=2)
    ax.set_xticks([g.steps for g in rungs], [f"{g.steps:,}" for g in rungs])
    ax.minorticks_off()
    ax.set(xlabel="training steps", ylabel="hidden neurons beyond 14")
    fig.legend(loc="outside lower center", ncols=2, fontsize=9, frameon=False)  # off the data
    return fig


def fig2_records(rung: Rung, *, profile: str, run: str = "") -> list:
    """The Fig. 2 rows of one rung: counts of its first seed (as the chapter's first seed),
    the fractions over its seeds, the seeds with a merging output group; each with its budget
    (``verdict.budget``) and ``run``, the recorded run's name ("" for this build)."""
    first, R = rung.rows[0], len(rung.rows)
    f = fractions(list(rung.rows))
    one, every = (verdict.budget("fig2", steps=rung.steps, T=rung.T, seeds=k) for k in (1, R))
    kw = dict(profile=profile, run=run)
    rows = [
        scorecard.record(id_, value, seeds=1, budget=one, **kw)
        for id_, value in (
            ("fig2.hidden_after_pruning", first.hidden),
            ("fig2.output_after_pruning", first.output),
            ("fig2.lambda_one", first.lam_one),
            ("fig2.lambda_zero", first.lam_zero),
        )
    ]
    for id_, value in (
        ("fig2.construction_counts_fraction", f["construction_counts"][0] / R),
        ("fig2.learned_fraction", f["learned"][0] / R),
        ("fig2.merge_found", sum(r.merged > 0 for r in rung.rows)),
    ):
        rows.append(scorecard.record(id_, value, seeds=R, budget=every, **kw))
    return rows + held_out_records(list(rung.rows), budget=every, **kw)


def held_out_records(rows: list, *, budget: str, profile: str, run: str = "") -> list:
    """The rows over every held-out seed of ``rows`` (``members.held_out_values``): Table 1's
    medians and App. C.2's merged neurons."""
    return [
        scorecard.record(
            id_, value, seeds=len(rows), budget=budget, note=note, profile=profile, run=run
        )
        for id_, value, note in held_out_values(rows)
    ]


def read_ladder(here: Rung, *, prune_tol: float, profile: str, names=LADDER_RUNS) -> list[Rung]:
    """``here`` (this build's rung) and a ``Rung`` per recorded run of ``names`` (its members
    read with ``members.member_rows`` at ``prune_tol``), in that order; shows each recorded
    rung's Fig. 2 rows (``fig2_records``, as rows of that run) and says which is missing."""
    from .. import experiments
    from .members import member_rows

    rungs = [here]
    for name in names:
        if name not in experiments.recorded_names():
            print(f"{name} is not recorded in this package yet.")
            continue
        run = experiments.recorded(name)
        rows = member_rows(run, prune_tol=prune_tol)
        rung = Rung(name, run.config.train.steps, run.config.T, tuple(rows))
        rungs.append(rung)
        scorecard.show(fig2_records(rung, profile=profile, run=name), source=False)
    return rungs


def sensitivity_text(*, prune_tol: float) -> str:
    """For each recorded sensitivity run (``teacher-identification-<setting>-quick``, the
    settings of ``experiments.SENSITIVITY``): its learning rate and weight decay, then its
    member table; or that none is recorded."""
    from .. import experiments
    from .members import member_rows, member_table

    lines = []
    for setting in experiments.SENSITIVITY:
        name = f"teacher-identification-{setting}-quick"
        if name not in experiments.recorded_names():
            continue
        run = experiments.recorded(name)
        tc = run.config.train
        lines.append(f"{setting}: lr {tc.lr:g}, weight decay {tc.weight_decay:g}")
        lines.append(member_table(member_rows(run, prune_tol=prune_tol)))
    if not lines:
        return (
            "No sensitivity run is recorded in this copy of the package; the record command "
            "above trains and records one."
        )
    return "\n".join(lines)
