"""Readings of the recorded Fig. 4A/B runs at a longer budget (``experiments.recorded``): the run,
its rate search (recorded as ``<config name>-lr-cpu``, when it is), its rows and members, and
each row's value under the rule in force when the run was made (``values_before``).

    teacher_run      the recorded Fig. 4A run (``analysis.family_losses.fig4a_rows``)
    regression_run   the recorded Fig. 4B run (``analysis.family_losses.fig4b_rows``)
    search_minutes   how long a recorded rate search trained, in minutes
"""

from __future__ import annotations

import dataclasses

from .. import experiments
from ..analysis.family_losses import fig4a_rows, fig4b_rows, values_before

__all__ = ["LongerRun", "regression_run", "search_minutes", "teacher_run"]


@dataclasses.dataclass(frozen=True)
class LongerRun:
    """A recorded Fig. 4 run: its name, the run (``experiments.recorded``), its rate search
    (None when not recorded), its rows (id -> ``Row``), its members (family -> ``Members``)
    and each row's value under the rule in force when it was made (id -> value)."""

    name: str
    run: object
    search: object
    rows: dict
    members: dict
    before: dict

    @property
    def config(self):
        return self.run.config

    @property
    def tensors(self):
        return self.run.tensors


def _search(run):
    name = f"{run.config.name}-lr-cpu"
    return experiments.recorded(name) if name in experiments.recorded_names() else None


def teacher_run(name: str) -> LongerRun | None:
    """The recorded Fig. 4A run ``name`` read with ``fig4a_rows``; None when not recorded."""
    if name not in experiments.recorded_names():
        return None
    run = experiments.recorded(name)
    rc, RT = run.config, run.tensors
    search = _search(run)
    rows, members = fig4a_rows(rc, RT)
    then = values_before(lambda rule: fig4a_rows(rc, RT, rule=rule)[0], run.meta["created_utc"])
    return LongerRun(name, run, search, rows, members, then)


def regression_run(name: str, gd_in: float, gd_ood: float, bar: float) -> LongerRun | None:
    """The recorded Fig. 4B run ``name`` read with ``fig4b_rows`` (OOD loss over ``gd_ood``,
    a seed kept where its in-distribution loss over ``gd_in`` is at most ``bar``); None when
    not recorded."""
    if name not in experiments.recorded_names():
        return None
    run = experiments.recorded(name)
    rc, RT = run.config, run.tensors
    search = _search(run)
    rows, members, _ = fig4b_rows(rc, RT, gd_ood, gd_in=gd_in, bar=bar)

    def under(rule):
        return fig4b_rows(rc, RT, gd_ood, gd_in=gd_in, bar=bar, rule=rule)[0]

    then = values_before(under, run.meta["created_utc"])
    return LongerRun(name, run, search, rows, members, then)


def search_minutes(name: str) -> float | None:
    """The minutes the recorded run ``name`` (a rate search, ``<config name>-lr-cpu``) took;
    None when it is not recorded."""
    if name not in experiments.recorded_names():
        return None
    return experiments.recorded(name).meta["wall_time_s"] / 60
