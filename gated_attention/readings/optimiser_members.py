"""The optimiser comparison over the recorded members (``experiments.optimiser_members``; ours,
not the paper's): one row per member, the values of its scorecard rows and the numbers the
surplus-neurons chapter quotes. Counts are (hidden, lam ~ 1, lam ~ 0, output)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.consolidation import construction_counts
from ..experiments.cache import RECORDED_ROOT
from ..experiments.optimiser_members import HELD_OUT, MEMBERS

#: the arm whose counts are checked against the construction, and the arm its loss is set against
REACH_ARM, REFERENCE_ARM = "adam_l2", "adamw"


def construction_step(steps: Sequence[int], counts, target: tuple[int, int, int]) -> int | None:
    """The first of ``steps`` whose ``counts`` (K + 1, >= 3) start with ``target``, or None."""
    for s, c in zip(steps, counts, strict=True):
        if tuple(int(v) for v in c[:3]) == tuple(target):
            return int(s)
    return None


@dataclass(frozen=True)
class MemberRow:
    """One member: ``start_loss`` at step 0; ``end``, ``held_out_loss`` per arm at the last step;
    ``reach_step``: REACH_ARM's first record of the construction's counts (None: never); ``cost_*``
    REACH_ARM's held-out loss over REFERENCE_ARM's at that step, at the end, and (``late``, less
    noisy) the ratio of their medians over the records of the run's second half."""

    label: str
    held_out: bool
    twin: bool  # held out, but the twin of a member that chose the arms' values (``twins``)
    start: tuple[int, ...]
    start_loss: float
    end: dict[str, tuple[int, ...]]
    held_out_loss: dict[str, float]
    reach_step: int | None
    cost_at_reach: float | None
    cost_end: float
    cost_late: float

    def ends_at(self, arm: str, target: tuple[int, int, int]) -> bool:
        """Whether ``arm`` ends at exactly ``target`` (hidden, lam ~ 1, lam ~ 0)."""
        return tuple(self.end[arm][:3]) == tuple(target)


def _run_fields(run: str) -> dict:
    """The config fields of the recorded teacher-student run ``run`` (its meta.json)."""
    return json.loads((RECORDED_ROOT / run / "meta.json").read_text())["config"]["fields"]


def _label(run: str, member: int) -> str:
    """ "seed0" for a one-member run, "gpu seed 2" for member 2 of a run of several."""
    fields = _run_fields(run)
    short = run.removeprefix("teacher-identification-").removeprefix("paper-")
    return short if len(fields["seeds"]) == 1 else f"{short} seed {fields['seeds'][member]}"


def member_seed(run: str, member: int) -> int:
    """The member's seed: it picks teacher, initialisation and data, so one seed makes twins."""
    return int(_run_fields(run)["seeds"][member])


def twins(config) -> list[tuple[str, int]]:
    """The held-out members that share a seed with a member that chose the arms' values."""
    tuning = {member_seed(*m) for m in config.members if m not in config.held_out}
    return [m for m in config.held_out if member_seed(*m) in tuning]


def construction_target(config) -> tuple[int, int, int]:
    """The construction's (hidden, lam ~ 1, lam ~ 0) for the members' d. ValueError: several d."""
    ds = {_run_fields(run)["d"] for run, _ in config.members}
    if len(ds) != 1:
        raise ValueError(f"the members' teachers have different d: {sorted(ds)}")
    c = construction_counts(ds.pop())
    return c["one"] + c["zero"], c["one"], c["zero"]


def member_rows(result) -> list[MemberRow]:
    """A ``MemberRow`` per member of an ``OptimiserMembersConfig`` result (config, tensors)."""
    config, t = result.config, result.tensors
    labels = list(config.labels)
    for arm in (REACH_ARM, REFERENCE_ARM):
        if arm not in labels:
            raise ValueError(f"the comparison has no arm {arm!r}; arms: {labels}")
    r, a0 = labels.index(REACH_ARM), labels.index(REFERENCE_ARM)
    steps = [int(s) for s in t["steps"]]
    target = construction_target(config)
    late = t["steps"] > steps[-1] / 2
    twin = set(twins(config))
    rows = []
    for p, (run, member) in enumerate(config.members):
        counts, loss = t["counts"][p], t["held_out"][p]
        hit = construction_step(steps, counts[r], target)
        at = None if hit is None else steps.index(hit)
        rows.append(
            MemberRow(
                label=_label(run, member),
                held_out=(run, member) in config.held_out,
                twin=(run, member) in twin,
                start=tuple(int(v) for v in counts[0, 0]),
                start_loss=float(loss[0, 0]),
                end={a: tuple(int(v) for v in counts[i, -1]) for i, a in enumerate(labels)},
                held_out_loss={a: float(loss[i, -1]) for i, a in enumerate(labels)},
                reach_step=hit,
                cost_at_reach=None if at is None else float(loss[r, at] / loss[a0, at]),
                cost_end=float(loss[r, -1] / loss[a0, -1]),
                cost_late=float(loss[r, late].median() / loss[a0, late].median()),
            )
        )
    return rows


def missed(result) -> list[MemberRow]:
    """The members of ``result`` whose REACH_ARM does not end at the construction's counts."""
    rows, target = member_rows(result), construction_target(result.config)
    return [r for r in rows if not r.ends_at(REACH_ARM, target)]


@dataclass(frozen=True)
class Arm:
    """One arm of a comparison; ``decay_budget``: lr x wd x steps."""

    label: str
    optimiser: str
    lr: float
    wd: float
    decay_budget: float


def arms(config) -> list[Arm]:
    """An Arm per arm of the comparison ``config`` (an ``OptimiserMembersConfig``)."""
    return [Arm(label, *config.arm(label), config.decay_budget(label)) for label in config.labels]


def table_rows(result) -> list[dict]:
    """Each ``MemberRow`` of ``result`` flattened for a table (held out: "yes", "twin" or "no")."""
    config, out = result.config, []
    for row in member_rows(result):
        flat = {
            "member": row.label,
            "held out": ("twin" if row.twin else "yes") if row.held_out else "no",
            "start": row.start,
            "start held-out": row.start_loss,
        }
        for a in config.labels:
            flat[f"{a} end"] = row.end[a]
            flat[f"{a} held-out"] = row.held_out_loss[a]
        flat |= {
            "reach step": row.reach_step,
            "cost at": row.cost_at_reach,
            "cost end": row.cost_end,
            "late": row.cost_late,
        }
        out.append(flat)
    return out


def members_scores(result) -> dict[str, float | int]:
    """The values of the optim.* scorecard rows. ValueError: no AdamW arm."""
    config, rows = result.config, member_rows(result)
    target = construction_target(config)
    adamw = [a for a in config.labels if config.arm(a)[0] == "adamw"]
    if not adamw:
        raise ValueError(f"the comparison has no AdamW arm; arms: {list(config.labels)}")
    return {
        "optim.adam_l2_reaches_construction": sum(r.ends_at(REACH_ARM, target) for r in rows),
        "optim.adam_l2_held_out_reaches": sum(
            r.ends_at(REACH_ARM, target) for r in rows if r.held_out
        ),
        "optim.adam_l2_independent_reaches": sum(
            r.ends_at(REACH_ARM, target) for r in rows if r.held_out and not r.twin
        ),
        "optim.adamw_keeps_surplus": sum(all(r.end[a][0] > target[0] for a in adamw) for r in rows),
        "optim.adam_l2_loss_cost": statistics.median(r.cost_end for r in rows),
    }


def new_seeds_scores(result) -> dict[str, float | int]:
    """The values of the optim.new_seeds_* rows (``optimiser_new_seeds_config``). ValueError: a
    member not held out or sharing a seed with one that chose the arms' values (not independent)."""
    tuning = {member_seed(*m) for m in MEMBERS if m not in HELD_OUT}  # the seeds that chose 3e-5
    dependent = [
        r.label
        for r, m in zip(member_rows(result), result.config.members, strict=True)
        if not r.held_out or r.twin or member_seed(*m) in tuning
    ]
    if dependent:
        raise ValueError(f"new-seed rows on members that are not independent: {dependent}")
    scores = members_scores(result)
    return {
        "optim.new_seeds_adam_l2_reaches": scores["optim.adam_l2_reaches_construction"],
        "optim.new_seeds_adamw_keeps_surplus": scores["optim.adamw_keeps_surplus"],
        "optim.new_seeds_adam_l2_loss_cost": scores["optim.adam_l2_loss_cost"],
    }


@dataclass(frozen=True)
class Provenance:
    """Where a recorded comparison ran."""

    name: str
    command: str
    commit: str
    cpu: str
    minutes: float
    paper_profile: bool


def provenance(result, paper_config) -> Provenance:
    """The Provenance of ``result``; ``paper_config``: ``optimiser_members_config("paper")``."""
    prov, meta = result.provenance, result.meta
    return Provenance(
        result.path.name,
        prov["command"],
        prov["commit"][:7],
        meta["hardware"]["cpu"],
        meta["wall_time_s"] / 60,
        result.config == paper_config,
    )


def _power(v: float) -> str:
    """``v`` to one digit as a power of ten: 2.2e-12 -> "2·10⁻¹²"."""
    mantissa, exponent = f"{v:.0e}".split("e")
    sup = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
    return f"{mantissa}·10{str(int(exponent)).translate(sup)}"


def cost_numbers(result) -> dict[str, str]:
    """The numbers the prose quotes about ``result`` (name -> text): start losses and costs."""
    rows = member_rows(result)
    start = [r.start_loss for r in rows]
    end = [r.cost_end for r in rows]
    at = [r.cost_at_reach for r in rows if r.cost_at_reach is not None]
    late = [r.cost_late for r in rows]

    def two(v: float) -> str:  # two significant digits, no exponent from 100 on: 89.8 -> "90"
        return f"{float(f'{v:.2g}'):g}"

    return {
        "opt-start-low": _power(min(start)),
        "opt-start-high": _power(max(start)),
        "opt-end-low": two(min(end)),
        "opt-end-high": two(max(end)),
        "opt-end-median": two(statistics.median(end)),
        "opt-reach-low": two(min(at)) if at else "n/a",
        "opt-reach-high": two(max(at)) if at else "n/a",
        "opt-late-low": two(min(late)),
        "opt-late-high": two(max(late)),
        "opt-late-median": two(statistics.median(late)),
    }
