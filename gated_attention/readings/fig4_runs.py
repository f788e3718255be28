"""Readings of the recorded Fig. 4A/B runs at a longer budget (``experiments.recorded``): the run,
its rate search (recorded as ``<config name>-lr-cpu``, when it is), its rows and members, and
each row's value under the rule in force when the run was made (``values_before``)."""

from __future__ import annotations

import dataclasses

from .. import experiments
from ..analysis.family_losses import fig4a_rows, fig4b_rows, values_before


@dataclasses.dataclass(frozen=True)
class LongerRun:
    """A recorded Fig. 4 run: ``search`` its rate search (None: not recorded), ``rows`` id ->
    ``Row``, ``members`` family -> ``Members``, ``before`` id -> the value under its rule then."""

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


def _recorded(name: str):
    """The recorded run ``name``, or None when it is not recorded."""
    return experiments.recorded(name) if name in experiments.recorded_names() else None


def _longer(name: str, read) -> LongerRun | None:
    """The recorded run read with ``read(config, tensors, rule=...)`` -> (rows, members)."""
    run = _recorded(name)
    if run is None:
        return None
    rc, RT = run.config, run.tensors
    rows, members = read(rc, RT)
    then = values_before(lambda rule: read(rc, RT, rule=rule)[0], run.meta["created_utc"])
    return LongerRun(name, run, _recorded(f"{rc.name}-lr-cpu"), rows, members, then)


def teacher_run(name: str) -> LongerRun | None:
    """The recorded Fig. 4A run ``name`` read with ``fig4a_rows``; None when not recorded."""
    return _longer(name, fig4a_rows)


def regression_run(name: str, gd_in: float, gd_ood: float, bar: float) -> LongerRun | None:
    """The recorded Fig. 4B run ``name`` read with ``fig4b_rows``; None when not recorded."""
    return _longer(
        name, lambda rc, RT, **rule: fig4b_rows(rc, RT, gd_ood, gd_in=gd_in, bar=bar, **rule)[:2]
    )


def search_minutes(name: str) -> float | None:
    """The minutes the recorded rate search ``name`` took; None when not recorded."""
    run = _recorded(name)
    return None if run is None else run.meta["wall_time_s"] / 60
