"""The optimiser comparison over the recorded members (``experiments.optimiser_members``; ours,
not the paper's): one row per member, the table the teacher-identification chapter prints, the
scorecard values of its rows and the figure of the counts against the steps.

Glossary (code name -> meaning):
    construction_step  first recorded step whose (hidden, lam ~ 1, lam ~ 0) is the target's
    MemberRow          one member: start and end counts, held-out losses, the step and cost
    member_rows        a ``MemberRow`` per member of an ``OptimiserMembersConfig`` result
    members_table      those rows as a plain-text table
    members_scores     the values of the optim.* scorecard rows
    new_seeds_scores   the values of the optim.new_seeds_* rows (the comparison on new seeds)
    new_seeds_finding  one sentence: what the new seeds show, from those values
    plot_members_counts  hidden, lam ~ 1, lam ~ 0 and the held-out loss, one column per member
    provenance_text    where a recorded comparison ran and whether it is the paper profile's
    members_records    the optim.* rows of a recorded comparison, scored
    new_seeds_records  the optim.new_seeds_* rows of the comparison on new seeds, scored
    cost_numbers       the numbers the prose quotes: start losses and loss costs, their ranges
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np

from ..analysis.consolidation import construction_counts
from ..experiments.cache import RECORDED_ROOT
from ..experiments.optimiser_members import HELD_OUT, MEMBERS

__all__ = [
    "construction_step",
    "MemberRow",
    "member_rows",
    "members_table",
    "members_scores",
    "new_seeds_scores",
    "new_seeds_finding",
    "plot_members_counts",
    "provenance_text",
    "members_records",
    "new_seeds_records",
    "cost_numbers",
    "REACH_ARM",
    "REFERENCE_ARM",
]

#: the arm whose counts are checked against the construction, and the arm its loss is set against
REACH_ARM, REFERENCE_ARM = "adam_l2", "adamw"
#: how the figure names the optimisers
_OPTIMISER_NAMES = {"adamw": "AdamW", "adam_l2": "Adam + L2", "sgd_l2": "SGD + L2"}
#: colour, line style, width per arm (AdamW's wide and pale, so a line on top of it shows)
_STYLE = {
    "adamw": ("C0", "-", 3.5),
    "adamw_strong": ("C1", "-.", 1.8),
    "adam_l2": ("C3", "--", 1.6),
    "sgd_l2": ("C2", ":", 2.0),
}


def construction_step(steps: Sequence[int], counts, target: tuple[int, int, int]) -> int | None:
    """The first of ``steps`` at which ``counts`` (K + 1, >= 3: hidden, lam ~ 1, lam ~ 0, ...)
    equals ``target``; None if it never does."""
    for s, c in zip(steps, counts, strict=True):
        if tuple(int(v) for v in c[:3]) == tuple(target):
            return int(s)
    return None


@dataclass(frozen=True)
class MemberRow:
    """One member of the comparison. Counts are (hidden, lam ~ 1, lam ~ 0, output).

    ``start_loss``: the held-out loss at step 0 (the same start for every arm). ``end`` and
    ``held_out_loss``: per arm label, at the last step. ``reach_step``: the first
    recorded step at which REACH_ARM has the construction's (hidden, lam ~ 1, lam ~ 0), or None;
    ``cost_at_reach``: REACH_ARM's held-out loss over REFERENCE_ARM's at that step (None without
    it); ``cost_end``: the same ratio at the last step; ``cost_late``: the ratio of the two
    arms' median held-out losses over the records of the second half of the run (steps above
    half the last), less noisy than one record.
    """

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


def _seed(run: str, member: int) -> int:
    """The seed of member ``member`` of the recorded run ``run``: it picks the member's teacher,
    initialisation and data, so two members of one seed (in two runs) are twins."""
    return int(_run_fields(run)["seeds"][member])


def twins(config) -> list[tuple[str, int]]:
    """The held-out members that share a seed with a member used to choose the arms' values
    (a twin: same teacher, initialisation and data, so not independent evidence)."""
    tuning = {_seed(*m) for m in config.members if m not in config.held_out}
    return [m for m in config.held_out if _seed(*m) in tuning]


def _target(config) -> tuple[int, int, int]:
    """The construction's (hidden, lam ~ 1, lam ~ 0) of the members' teacher (one d for all)."""
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
    target = _target(config)
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


def _counts_text(c: Sequence[int]) -> str:
    return f"{c[0]} = {c[1]} + {c[2]}, {c[3]}"


def members_table(result) -> str:
    """A plain-text table, one row per member: held out (not used to choose any arm's values)?,
    the start counts and held-out loss, per arm the end counts (hidden = lam~1 + lam~0, output)
    and held-out loss, the step at which REACH_ARM first has the construction's counts, and its
    held-out loss over REFERENCE_ARM's at that step and at the end. The header gives each arm's
    optimiser, lr, weight decay and decay budget lr x wd x steps."""
    config = result.config
    rows = member_rows(result)
    h, one, zero = _target(config)
    lines = [
        f"{config.steps:,} steps per arm at T = {config.T}, batch {config.batch_size}; "
        f"the construction: {h} = {one} + {zero}; counts: hidden = lam~1 + lam~0, output"
    ]
    for label in config.labels:
        opt, lr, wd = config.arm(label)
        lines.append(
            f"  arm {label:<13} {opt:<8} lr {lr:g}, wd {wd:g}: "
            f"lr x wd x steps = {config.decay_budget(label):.3g}"
        )
    arm_head = "".join(f" {a + ' end':>17} {'held-out':>8}" for a in config.labels)
    lines.append(
        f"{'member':<12} {'held out':>8} {'start':>17} {'held-out':>8}{arm_head} "
        f"{'step ' + str(h):>8} "
        f"{'cost at':>8} {'cost end':>8} {'late':>8}"
    )
    for row in rows:
        arms = "".join(
            f" {_counts_text(row.end[a]):>17} {row.held_out_loss[a]:>8.2g}" for a in config.labels
        )
        step = "-" if row.reach_step is None else f"{row.reach_step:,}"
        cost = "-" if row.cost_at_reach is None else f"{row.cost_at_reach:.3g}"
        lines.append(
            f"{row.label:<12} {('twin' if row.twin else 'yes') if row.held_out else 'no':>8} "
            f"{_counts_text(row.start):>17} {row.start_loss:>8.2g}{arms} {step:>8} {cost:>8} "
            f"{row.cost_end:>8.3g} {row.cost_late:>8.3g}"
        )
    lines.append(
        f"cost: held-out loss of {REACH_ARM} over that of {REFERENCE_ARM}, at the step "
        f"{REACH_ARM} first has {h} = {one} + {zero}, at the end, and of the medians over the "
        "second half of the run"
    )
    return "\n".join(lines)


def members_scores(result) -> dict[str, float | int]:
    """The values of the optim.* scorecard rows: members whose REACH_ARM ends at the
    construction's counts (all; the held-out ones; the held-out ones that are no twin of a
    member that chose the values, ``twins``), members whose every AdamW arm ends with more
    hidden neurons than the construction, and the median end cost."""
    config, rows = result.config, member_rows(result)
    target = _target(config)
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
    """The values of the optim.new_seeds_* rows, on the comparison over new seeds
    (``experiments.optimiser_new_seeds_config``): every member must be held out and share no
    seed with a member that chose the arms' values (in this comparison or the paper-budget one),
    else the rows would count evidence that is not independent."""
    tuning = {_seed(*m) for m in MEMBERS if m not in HELD_OUT}  # the seeds that chose 3e-5
    rows = member_rows(result)
    dependent = [
        r.label
        for r, m in zip(rows, result.config.members, strict=True)
        if not r.held_out or r.twin or _seed(*m) in tuning
    ]
    if dependent:
        raise ValueError(f"new-seed rows on members that are not independent: {dependent}")
    scores = members_scores(result)
    return {
        "optim.new_seeds_adam_l2_reaches": scores["optim.adam_l2_reaches_construction"],
        "optim.new_seeds_adamw_keeps_surplus": scores["optim.adamw_keeps_surplus"],
        "optim.new_seeds_adam_l2_loss_cost": scores["optim.adam_l2_loss_cost"],
    }


def new_seeds_finding(result) -> str:
    """What the comparison on new seeds shows, in one sentence generated from its rows' values."""
    v, P = new_seeds_scores(result), len(result.config.members)
    h, one, zero = _target(result.config)
    reach, keep = v["optim.new_seeds_adam_l2_reaches"], v["optim.new_seeds_adamw_keeps_surplus"]
    both = reach == P and keep == P
    missed = [r for r in member_rows(result) if not r.ends_at(REACH_ARM, (h, one, zero))]
    short = [r for r in missed if r.start[1] < one]
    why = (
        f" Of the {len(missed)} that miss, {len(short)} started with fewer than the "
        f"construction's {one} neurons at lam ~ 1 ("
        + ", ".join(f"{r.label}: {r.start[1]}, held-out loss {r.start_loss:.2g}" for r in short)
        + "): the L2 arm removed surplus neurons, it did not build missing ones (our reading)."
        if short
        else ""
    )
    return (
        f"On the {P} new seeds, Adam + L2 ends at exactly {h} = {one} + {zero} on {reach} of {P} "
        f"members and both AdamW arms keep more than {h} hidden neurons on {keep} of {P}; the "
        f"median held-out loss of Adam + L2 over AdamW's at the end is "
        f"{v['optim.new_seeds_adam_l2_loss_cost']:.3g}. "
        + (
            "The finding holds on every independent member."
            if both
            else "The finding does not hold on every independent member: it is not general."
        )
        + why
    )


def plot_members_counts(result):
    """Hidden, lam ~ 1 and lam ~ 0 counts after pruning and the held-out loss against the steps:
    one column per member, one line per arm; dashed grey: the construction's counts. Returns the
    figure."""
    config, t = result.config, result.tensors
    steps = t["steps"].numpy()
    rows = member_rows(result)
    h, one, zero = _target(config)
    P = len(config.members)
    fig, axes = plt.subplots(
        4, P, figsize=(2.8 * P + 1, 8), layout="constrained", sharex=True, squeeze=False
    )
    names = ["hidden", "lam ~ 1", "lam ~ 0"]
    for p, row in enumerate(rows):
        for i, label in enumerate(config.labels):
            opt, _, wd = config.arm(label)
            name = f"{_OPTIMISER_NAMES.get(opt, opt)}, wd {wd:g}"
            color, ls, lw = _STYLE.get(label, ("k", "-", 1.6))
            style = {"color": color, "ls": ls, "lw": lw, "alpha": 0.5 if lw > 3 else 1.0}
            for k in range(3):
                axes[k, p].plot(steps, t["counts"][p, i, :, k].numpy(), label=name, **style)
            loss = np.maximum(t["held_out"][p, i].numpy(), 1e-30)
            axes[3, p].semilogy(steps, loss, **{**style, "lw": min(lw, 1.8)})
        for k, ref in enumerate((h, one, zero)):
            axes[k, p].axhline(ref, color="0.5", ls="--", lw=0.8)
            axes[k, p].set_ylim(bottom=0)
            axes[k, p].yaxis.get_major_locator().set_params(integer=True)
        held = " (held out, a twin)" if row.twin else " (held out)" if row.held_out else ""
        axes[0, p].set_title(f"{row.label}{held}", fontsize=10)
        axes[3, p].set_xlabel("steps continued")
    for k, name in enumerate([*names, "held-out loss"]):
        axes[k, 0].set_ylabel(name)
    axes[0, 0].legend(fontsize=8)
    return fig


def provenance_text(result, paper_config) -> str:
    """Two lines: the recorded run's name and command; its commit, machine, minutes, and whether
    its config is ``paper_config`` (``experiments.optimiser_members_config("paper")``)."""
    prov, meta = result.provenance, result.meta
    return (
        f"recorded run {result.path.name}: {prov['command']}\n"
        f"  commit {prov['commit'][:7]}; {meta['hardware']['cpu']}, "
        f"{meta['wall_time_s'] / 60:.0f} min; the paper profile: {result.config == paper_config}"
    )


def members_records(result) -> list:
    """The optim.* rows (``members_scores``) of the recorded comparison ``result``, scored as
    rows of that run (paper profile); the held-out rows count the held-out members."""
    from . import scorecard, verdict

    c = result.config
    budget = verdict.budget("optim", steps=c.steps, T=c.T, seeds=len(c.members))
    return [
        scorecard.record(
            id_,
            v,
            profile="paper",
            run=result.path.name,
            budget=budget,
            seeds=len(c.held_out) if "held_out" in id_ else len(c.members),
        )
        for id_, v in members_scores(result).items()
    ]


def new_seeds_records(result) -> list:
    """The optim.new_seeds_* rows (``new_seeds_scores``) of the comparison on new seeds,
    scored as rows of that recorded run (paper profile), over all its members."""
    from . import scorecard, verdict

    c, P = result.config, len(result.config.members)
    budget = verdict.budget("optim", steps=c.steps, T=c.T, seeds=P)
    return [
        scorecard.record(id_, v, profile="paper", run=result.path.name, budget=budget, seeds=P)
        for id_, v in new_seeds_scores(result).items()
    ]


def _power(v: float) -> str:
    """``v`` to one digit as a power of ten: 2.2e-12 -> "2·10⁻¹²"."""
    mantissa, exponent = f"{v:.0e}".split("e")
    sup = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
    return f"{mantissa}·10{str(int(exponent)).translate(sup)}"


def cost_numbers(result) -> dict[str, str]:
    """The numbers the prose quotes about the comparison ``result`` (name -> text, for
    ``glue``): the range of the members' start losses; the range and median of REACH_ARM's
    held-out loss over REFERENCE_ARM's at the end; its range at REACH_ARM's first record of
    the construction's counts; the range and median over the second half of the run."""
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
