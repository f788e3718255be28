"""The rules that turn a Fig. 4A/B family's seeds into a scorecard row, and the rules that were
in force before them (for a recorded run made under an older rule: paper_values.json,
``rule_set_after_runs``; ``scorecard.record(before=...)``).

Glossary:
    members   ``Members``: the seeds of one family at the largest target, each kept or excluded
    premise   what every family a row reads must meet, else the row is NaN with the note
              "premise fails: ..." (``PREMISE``; ``report.verdict``: undecided)
    rule      ``Rule``: which seeds a row reads, their centre and its premise: ``TODAY`` (the
              median over the kept seeds, a majority kept), ``MEDIAN_KEPT`` (one kept seed
              enough: commit 8fbbb48, 2026-12-02, until 2026-12-06), ``MEAN_ALL`` (the mean
              over every seed, no premise: before 8fbbb48)
    interval  the 95% bootstrap interval of a row's statistic (``bootstrap_interval``)
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
    """The seeds of one family at the largest parameter target: the scored loss of each
    (``losses``, a diverged seed +inf) and why a seed is excluded from the rows: ``diverged``
    (its scored or gate loss is non-finite) or ``not_learned`` (its gate loss is above the bar).
    The statistics are over the kept seeds only, NaN when none is kept."""

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
        """The median of the kept losses (two middle seeds: their midpoint); NaN if none."""
        kept = self.kept
        return statistics.median(kept) if kept else float("nan")

    @property
    def mean(self) -> float:
        """The mean of the kept losses; NaN if none."""
        kept = self.kept
        return sum(kept) / len(kept) if kept else float("nan")

    @property
    def worst(self) -> float:
        """The largest kept loss; NaN if none."""
        kept = self.kept
        return max(kept) if kept else float("nan")

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
    """One scorecard row of Fig. 4A/B: its value, the note that goes with it (the families it
    compares and what was excluded, or why its premise fails: then it is NaN) and the 95%
    bootstrap interval of its value over the seeds it reads (None when it is NaN, or a seed it
    reads is not finite)."""

    value: float
    note: str
    interval: tuple[float, float] | None = None


#: the bootstrap of the rows' intervals: draws, and the seed of its generator
DRAWS, BOOT_SEED = 2000, 0


def bootstrap_interval(stat, samples, *, draws: int = DRAWS, seed: int = BOOT_SEED):
    """The 95% bootstrap interval (lo, hi) of ``stat(*samples)`` over seeds: the 2.5% and
    97.5% quantiles of ``stat`` over ``draws`` draws, in each of which every sample (one
    family's kept losses) is drawn with replacement at its own size, independently of the
    others (numpy ``default_rng(seed)``). ``stat`` takes one sequence per sample, as the row
    does (a ratio of medians, say)."""
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
    """How a row reads the seeds of each family it compares: ``centre`` (the median or the mean)
    of its kept seeds, or of every seed when ``every_seed`` (a diverged one +inf, nothing
    excluded, no premise); its premise: a majority of kept seeds in every family
    (``majority``), else one kept seed."""

    name: str
    centre: Callable
    every_seed: bool = False
    majority: bool = True

    @property
    def needs(self) -> str:
        """The premise in words, as the note of a row whose premise fails says it."""
        return "a majority is needed" if self.majority else "one is needed"

    def sample(self, m: Members) -> tuple[float, ...]:
        """The losses of ``m`` that the rule reads."""
        return m.losses if self.every_seed else m.kept

    def holds(self, m: Members) -> bool:
        """Whether ``m`` meets the rule's premise."""
        if self.every_seed:
            return True
        return m.majority if self.majority else bool(m.kept)


#: the rows' rule: the median over the kept seeds, a majority of them in every family
TODAY = Rule("median over the kept seeds, a majority kept", statistics.median)
#: commit 8fbbb48 (2026-12-02) until the majority premise (2026-12-06): one kept seed enough
MEDIAN_KEPT = Rule("median over the kept seeds, one kept", statistics.median, majority=False)
#: before commit 8fbbb48: the mean over every seed (``family_losses.loss_at``, ``ratio``)
MEAN_ALL = Rule("mean over every seed", statistics.fmean, every_seed=True, majority=False)
#: when commit 8fbbb48 replaced MEAN_ALL by the medians over the kept seeds (UTC)
MEDIANS_SINCE = "2026-12-02T14:43:09Z"


def rule_row(stat, ms: list[Members], what: str, why: str, where: str, rule: Rule = TODAY) -> Row:
    """The row ``stat(rule.centre, *samples)`` of the members ``ms`` (one sample each, as
    ``rule`` reads them) with its bootstrap interval (None when a sample holds a non-finite
    loss), or NaN with the premise note when a family of the row does not meet the rule's
    premise; the note names the row's families (``what``) and what was excluded (``why``: the
    not-learned seeds; ``where``: appended to the premise note)."""
    failed = [m for m in ms if not rule.holds(m)]
    if failed:
        said = [
            f"{PREMISE}: {m.family} learned on {len(m.kept)} of {len(m.losses)} seeds "
            f"({rule.needs}): {m.excluded(why)}{where}"
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
    """Each row's value under the rule in force when its run was made, at ``made_utc`` (ISO
    8601 UTC, a recorded run's ``meta["created_utc"]``): ``MEAN_ALL`` before commit 8fbbb48
    (``MEDIANS_SINCE``), ``MEDIAN_KEPT`` from it (the majority premise came on 2026-12-06, and
    a run made under it needs no value before). ``rows_under(rule)`` gives the run's rows
    (id -> ``Row``) under ``rule``, e.g. ``lambda r: fig4a_rows(config, tensors, rule=r)[0]``.
    NaN where the premise of that rule failed (the row was undecided then)."""
    made = datetime.fromisoformat(made_utc.replace("Z", "+00:00"))
    since = datetime.fromisoformat(MEDIANS_SINCE.replace("Z", "+00:00"))
    rule = MEAN_ALL if made < since else MEDIAN_KEPT
    return {id: r.value for id, r in rows_under(rule).items()}
