"""The rules that turn a Fig. 4A/B family's seeds into a scorecard row, and the older rules (for a
run recorded under one: paper_values.json ``rule_set_after_runs``; ``scorecard.record(before=)``).

Glossary:
    premise   what every family a row reads must meet, else the row is NaN with the note
              "premise fails: ..." (``PREMISE``; ``report.verdict``: undecided)
    rule      ``Rule``: which seeds a row reads, their centre and its premise (``TODAY``,
              ``MEDIAN_KEPT``, ``MEAN_ALL``)
    before    a row's value under the rule in force when its run was made (``values_before``)
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections.abc import Callable
from datetime import datetime

import numpy as np

#: how the note of a row whose premise fails begins (``report.verdict``: undecided)
PREMISE = "premise fails"


@dataclasses.dataclass(frozen=True)
class Members:
    """The seeds of one family at the largest parameter target: ``losses`` (a diverged seed +inf)
    and why a seed is excluded: ``diverged`` (scored or gate loss non-finite) or ``not_learned``
    (gate loss above the bar). The statistics are over the kept seeds, NaN when none is kept."""

    family: str
    target: int
    losses: tuple[float, ...]
    diverged: tuple[bool, ...]
    not_learned: tuple[bool, ...]

    @property
    def kept(self) -> tuple[float, ...]:
        """The scored losses of the seeds that neither diverged nor failed to learn."""
        return tuple(
            v
            for v, d, n in zip(self.losses, self.diverged, self.not_learned, strict=True)
            if not (d or n)
        )

    @property
    def majority(self) -> bool:
        """More than half of the seeds kept: the premise of every row that reads the family."""
        return 2 * len(self.kept) > len(self.losses)

    @property
    def median(self) -> float:
        kept = self.kept
        return statistics.median(kept) if kept else float("nan")

    @property
    def mean(self) -> float:
        kept = self.kept
        return sum(kept) / len(kept) if kept else float("nan")

    @property
    def mean_all(self) -> float:
        """The mean over every seed, excluded ones too (+inf if one diverged): the old measure."""
        return sum(self.losses) / len(self.losses)

    def excluded(self, why: str = "not learned") -> str:
        """What was excluded, in words ("" when nothing): "1 of 3 diverged", and ``why`` for
        the not-learned seeds ("2 of 3 worse than predicting zero")."""
        n = len(self.losses)
        parts = []
        if any(self.diverged):
            parts.append(f"{sum(self.diverged)} of {n} diverged")
        if any(self.not_learned):
            parts.append(f"{sum(self.not_learned)} of {n} {why}")
        return ", ".join(parts)


@dataclasses.dataclass(frozen=True)
class Row:
    """One scorecard row of Fig. 4A/B: its value, its note (the families it compares and what was
    excluded, or why its premise fails: then NaN) and its 95% bootstrap interval (None when it is
    NaN or a seed it reads is not finite)."""

    value: float
    note: str
    interval: tuple[float, float] | None = None


#: the bootstrap of the rows' intervals: draws, and the seed of its generator
DRAWS, BOOT_SEED = 2000, 0


def bootstrap_interval(stat, samples, *, draws: int = DRAWS, seed: int = BOOT_SEED):
    """The 95% bootstrap interval (lo, hi) of ``stat(*samples)`` over seeds: in each of ``draws``
    draws every sample (one family's kept losses) is redrawn with replacement at its own size."""
    arrays = [np.asarray(x, dtype=np.float64) for x in samples]
    if not arrays or any(a.ndim != 1 or a.size == 0 for a in arrays):
        raise ValueError("every sample must hold at least one seed")
    g = np.random.default_rng(seed)
    picks = [a[g.integers(0, a.size, size=(draws, a.size))] for a in arrays]
    values = [float(stat(*(p[i] for p in picks))) for i in range(draws)]
    lo, hi = np.quantile(values, (0.025, 0.975))
    return float(lo), float(hi)


@dataclasses.dataclass(frozen=True)
class Rule:
    """How a row reads each family's seeds: ``centre`` (median or mean) of the kept seeds, or of
    every seed when ``every_seed`` (no premise); premise: a majority kept, else one kept."""

    name: str
    centre: Callable
    every_seed: bool = False
    majority: bool = True

    def sample(self, m: Members) -> tuple[float, ...]:
        return m.losses if self.every_seed else m.kept

    def holds(self, m: Members) -> bool:
        return self.every_seed or (m.majority if self.majority else bool(m.kept))


#: the rows' rule: the median over the kept seeds, a majority of them in every family
TODAY = Rule("median over the kept seeds, a majority kept", statistics.median)
#: commit 8fbbb48 (2026-12-02) until the majority premise (2026-12-06): one kept seed enough
MEDIAN_KEPT = Rule("median over the kept seeds, one kept", statistics.median, majority=False)
#: before commit 8fbbb48: the mean over every seed (``Members.mean_all``)
MEAN_ALL = Rule("mean over every seed", statistics.fmean, every_seed=True, majority=False)
#: when commit 8fbbb48 replaced MEAN_ALL by the medians over the kept seeds (UTC)
MEDIANS_SINCE = "2026-12-02T14:43:09Z"


def rule_row(stat, ms: list[Members], what: str, why: str, where: str, rule: Rule = TODAY) -> Row:
    """The row ``stat(rule.centre, *samples)`` of ``ms`` (one sample each, as ``rule`` reads them)
    with its interval, or NaN with the premise note when a family fails the premise. The note
    names the families (``what``) and the not-learned seeds (``why``); ``where`` ends a note."""
    failed = [m for m in ms if not rule.holds(m)]
    if failed:
        needs = "a majority is needed" if rule.majority else "one is needed"
        said = [
            f"{PREMISE}: {m.family} learned on {len(m.kept)} of {len(m.losses)} seeds "
            f"({needs}): {m.excluded(why)}{where}"
            for m in failed
        ]
        return Row(float("nan"), "; ".join(said))
    shown = [] if rule.every_seed else [m for m in ms if m.excluded(why)]
    out = [f"{m.family} {m.excluded(why)}" for m in shown]
    note = what + (f"; excluded: {', '.join(out)}" if out else "")
    samples = [rule.sample(m) for m in ms]
    f = functools.partial(stat, rule.centre)
    finite = all(math.isfinite(v) for s in samples for v in s)
    return Row(float(f(*samples)), note, bootstrap_interval(f, samples) if finite else None)


def values_before(rows_under: Callable[[Rule], dict], made_utc: str) -> dict[str, float]:
    """Each row's value under the rule in force at ``made_utc`` (a run's ``meta["created_utc"]``):
    ``MEAN_ALL`` before ``MEDIANS_SINCE``, else ``MEDIAN_KEPT`` (a run made under the majority
    premise needs no value before); NaN where that rule's premise failed. ``rows_under(rule)``:
    id -> ``Row``, e.g. ``lambda r: fig4a_rows(config, tensors, rule=r)[0]``."""
    before = datetime.fromisoformat(made_utc) < datetime.fromisoformat(MEDIANS_SINCE)
    rule = MEAN_ALL if before else MEDIAN_KEPT
    return {id: r.value for id, r in rows_under(rule).items()}
