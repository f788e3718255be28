"""Readings of the Fig. 4A/B runs (the families at matched parameter counts), for the chapters
"Which RNNs learn attention" and "Other RNNs in context"."""

from __future__ import annotations

import dataclasses
import math

from ..analysis.family_losses import PREMISE, late_fall, unstable
from ..experiments.architectures import at_grid_edge
from ..models.family_registry import family
from .fig3_rows import ScoreRow


def sweep_rows(config, tensors) -> list[dict]:
    """A rate-search row per family: ``{"family": label, rate: seed-mean loss (diverged: inf)}``."""
    rates = list(config.lr_grid)
    rows = []
    for fam in config.families:
        row: dict = {"family": family(fam).label}
        for r in rates:
            k = [i for i, g in enumerate(config.groups()) if g[0] == fam and g[2] == r][0]
            row[r] = float(tensors["eval_loss"][k].nan_to_num(nan=float("inf")).mean())
        rows.append(row)
    return rows


@dataclasses.dataclass(frozen=True)
class SummaryRow:
    """One family at the largest parameter target; ``count``: parameters; a diverged seed: +inf."""

    family: str
    width: int
    count: int
    lr: float
    mean: float
    range: tuple[float, float]
    ms_per_step: float


def summary_rows(config, tensors, key: str = "eval_loss") -> list[SummaryRow]:
    """A ``SummaryRow`` per family of the run (groups order) at its largest target."""
    top = max(config.targets)
    losses = tensors[key].nan_to_num(nan=float("inf"))
    return [
        SummaryRow(
            family=family(fam).label,
            width=int(tensors["widths"][k]),
            count=int(tensors["counts"][k]),
            lr=lr,
            mean=float(losses[k].mean()),
            range=(float(losses[k].min()), float(losses[k].max())),
            ms_per_step=1000 * float(tensors["step_time"][k]),
        )
        for k, (fam, target, lr) in enumerate(config.groups())
        if target == top
    ]


@dataclasses.dataclass(frozen=True)
class RateRow:
    """The rate a family trains at; ``at_top``: the largest of the sweep's grid."""

    family: str
    lr: float
    at_top: bool


def rate_rows(sweep, lrs) -> list[RateRow]:
    """A ``RateRow`` per (family, rate) of ``lrs`` (``at_top``: ``at_grid_edge``)."""
    edge = at_grid_edge(sweep, lrs)
    return [RateRow(family(f).label, lr, f in edge) for f, lr in lrs]


@dataclasses.dataclass(frozen=True)
class FallRow:
    """A family's ``late_fall``: its training loss's fall over the last fifth, a fraction."""

    family: str
    fall: float


def fall_rows(config, tensors) -> list[FallRow]:
    """A ``FallRow`` per family of the run."""
    return [FallRow(family(f).label, late_fall(config, tensors, f)) for f in config.families]


@dataclasses.dataclass(frozen=True)
class UnstableRow:
    """A group with ``bad`` of its ``seeds`` seeds non-finite or above the limit."""

    family: str
    target: int
    bad: int
    seeds: int


def unstable_rows(config, tensors, key="eval_loss", limit: float | None = 1.0) -> list:
    """An ``UnstableRow`` per group of ``analysis.family_losses.unstable`` (groups order)."""
    return [
        UnstableRow(family(f).label, t, k, n)
        for f, t, k, n in unstable(config, tensors, key, limit)
    ]


@dataclasses.dataclass(frozen=True)
class MemberRow:
    """A family's seeds at the largest target (``key``: its registry name): (loss / scale, whether
    excluded) per seed, ``Members.excluded``, the median and mean of the ``kept`` seeds of ``n``."""

    key: str
    family: str
    seeds: tuple[tuple[float, bool], ...]
    excluded: str
    median: float
    mean: float
    mean_all: float
    kept: int
    n: int


def member_rows(ms: dict, scale: float = 1.0, *, why: str) -> list[MemberRow]:
    """A ``MemberRow`` per ``Members`` in ``ms``, each loss over ``scale``."""
    return [
        MemberRow(
            key=m.family,
            family=family(m.family).label,
            seeds=tuple(
                (v / scale, bool(d or n))
                for v, d, n in zip(m.losses, m.diverged, m.not_learned, strict=True)
            ),
            excluded=m.excluded(why),
            median=m.median / scale,
            mean=m.mean / scale,
            mean_all=m.mean_all / scale,
            kept=len(m.kept),
            n=len(m.losses),
        )
        for m in ms.values()
    ]


def premise_fails(rows: dict) -> dict[str, str]:
    """id -> note of each row (``analysis.family_losses.Row``) whose premise fails."""
    return {id: r.note for id, r in rows.items() if r.note.startswith(PREMISE)}


#: how the note of a row whose interval straddles its criterion's threshold says so
CANNOT_DECIDE = "seeds cannot decide"
_WORDS = dict(enumerate("zero one two three four five six seven eight nine ten".split()))


@dataclasses.dataclass(frozen=True)
class Scored(ScoreRow):
    """A ``fig3_rows.ScoreRow`` and ``before``: its value under the rule when its run was made."""

    before: float | None = None


def scored_rows(
    rows: dict, *, seeds: int, entries: dict, straddled, run: str = "", before=None
) -> list[Scored]:
    """A ``Scored`` per (id -> ``family_losses.Row``) of ``rows``, its note adding "three seeds
    cannot decide" where ``straddled(criterion, tolerance, interval)`` of its ``entries`` entry
    (paper_values.json) is not None; ``before`` (id -> value, ``values_before``) left out where
    the premise fails or the value is NaN."""
    out = []
    for id, r in rows.items():
        entry = entries[id]
        note, t = r.note, straddled(entry["criterion"], entry.get("tolerance"), r.interval)
        if t is not None:
            said = f"{_WORDS.get(seeds, seeds)} {CANNOT_DECIDE}: the interval straddles {t:g}"
            note = f"{note}; {said}" if note else said
        then = (before or {}).get(id)
        if then is not None and (math.isnan(then) or r.note.startswith(PREMISE)):
            then = None
        out.append(Scored(id, r.value, seeds, note, run, r.interval, then))
    return out


def cannot_decide(records) -> dict[str, str]:
    """id -> the "cannot decide" part of the note (``scored_rows``) of each row of ``records``
    (anything with ``id`` and ``note``) that has one."""
    out = {}
    for r in records:
        said = [part for part in r.note.split("; ") if CANNOT_DECIDE in part]
        if said:
            out[r.id] = said[0]
    return out
