"""Fig. 2's surplus against the training budget (ours): the quick config at 1, 2, 4 and 8 times
its steps (``experiments.cpu_budget.LADDER``), and the learning-rate / weight-decay runs."""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import experiments
from .teacher_members import CONSTRUCTION, MemberRow, member_rows

#: the recorded rungs of the ladder (``experiments.cpu_budget``): 2, 4 and 8 times the steps
LADDER_RUNS = tuple(f"teacher-identification-cpu{s}" for s in ("-x2", "-x4", ""))


@dataclasses.dataclass(frozen=True)
class Rung:
    """One budget of the ladder (``name``: this build, or the recorded run's)."""

    name: str
    steps: int
    T: int
    rows: tuple[MemberRow, ...]

    @property
    def surplus(self) -> np.ndarray:
        """(seeds,) hidden neurons after pruning beyond the construction's 14."""
        return np.array([r.hidden - CONSTRUCTION[0] for r in self.rows])


@dataclasses.dataclass(frozen=True)
class LadderRow:
    """One rung: hidden neurons after pruning per seed, their mean surplus over 14, and of
    ``seeds`` those pruned to exactly 14 = 10 + 4 and that learned the construction."""

    steps: int
    hidden: tuple[int, ...]
    surplus: float
    at14: int
    learned: int
    seeds: int
    name: str


def ladder_rows(rungs: list[Rung]) -> list[LadderRow]:
    """A LadderRow per rung, in order of steps."""
    return [
        LadderRow(
            g.steps,
            tuple(r.hidden for r in g.rows),
            float(g.surplus.mean()),
            sum(r.counts == CONSTRUCTION for r in g.rows),
            sum(r.learned for r in g.rows),
            len(g.rows),
            g.name,
        )
        for g in sorted(rungs, key=lambda g: g.steps)
    ]


def read_rungs(*, prune_tol: float, names=LADDER_RUNS) -> tuple[list[Rung], list[str]]:
    """(a Rung per recorded run of ``names``, the names not recorded), in order."""
    rungs, missing = [], []
    for name in names:
        if name not in experiments.recorded_names():
            missing.append(name)
            continue
        run = experiments.recorded(name)
        rows = member_rows(run, prune_tol=prune_tol)
        rungs.append(Rung(name, run.config.train.steps, run.config.T, tuple(rows)))
    return rungs, missing


@dataclasses.dataclass(frozen=True)
class Surplus:
    """Over a run's members: ``kept`` those with more than 14 hidden neurons after pruning."""

    seeds: int
    learned: int
    kept: int


def surplus(rows: list[MemberRow]) -> Surplus:
    """The Surplus of the members ``rows``."""
    return Surplus(
        len(rows),
        sum(r.learned for r in rows),
        sum(r.hidden > CONSTRUCTION[0] for r in rows),
    )


@dataclasses.dataclass(frozen=True)
class Setting:
    """One recorded sensitivity run (``teacher-identification-<setting>-quick``)."""

    setting: str
    lr: float
    weight_decay: float
    rows: tuple[MemberRow, ...]


def sensitivity(*, prune_tol: float) -> list[Setting]:
    """A Setting per recorded run of ``experiments.SENSITIVITY``, in order."""
    out = []
    for setting in experiments.SENSITIVITY:
        name = f"teacher-identification-{setting}-quick"
        if name not in experiments.recorded_names():
            continue
        run = experiments.recorded(name)
        tc = run.config.train
        rows = member_rows(run, prune_tol=prune_tol)
        out.append(Setting(setting, tc.lr, tc.weight_decay, tuple(rows)))
    return out
