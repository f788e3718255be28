"""Fig. 2's surplus against the training budget: the same quick config trained at 1, 2, 4 and 8
times its steps (``experiments.cpu_budget.LADDER``), each rung a complete run, read member by
member (``members.member_rows``) and scored with Fig. 2's criteria.

    Rung          one budget: its name, steps, the rows of its members
    ladder_table  per rung: steps, each seed's hidden neurons after pruning, the mean surplus
                  over the construction's 14, how many seeds prune to 14 and learned it
    plot_surplus  each seed's surplus against the steps (log 2), the mean as a line
    fig2_records  a rung's Fig. 2 rows: the counts, the fractions, the merges, over its seeds
    count_records Fig. 2A/B's counts over every seed: the median, (min, max) as its interval
    fraction_records  the shares of seeds pruned to 14 = 10 + 4 and that learned it
    seed_records  Table 1's medians and App. C.2's merging (the share of seeds), over every seed
    row_record    ``scorecard.record``, marking a build row read from a run older than its rule
    seeds_budget  a run's budget text, naming its tuning seeds where it has any
    surplus_numbers  over a run's seeds: how many learned, how many keep a surplus (for glue)
    read_ladder   this build's rung and every recorded rung, each recorded one scored
    LADDER_RUNS   the recorded rungs, 2, 4 and 8 times the quick steps
    sensitivity_text  the member table of each recorded learning-rate / weight-decay setting
"""

from __future__ import annotations

import dataclasses
import statistics

import matplotlib.pyplot as plt
import numpy as np

from .. import analysis
from ..experiments.teacher_identification import TUNING_SEEDS
from . import scorecard, verdict
from .members import CONSTRUCTION, SELECTOR_SHARE, MemberRow, fractions, held_out_values

__all__ = [
    "Rung",
    "ladder_table",
    "plot_surplus",
    "fig2_records",
    "count_values",
    "count_records",
    "fraction_records",
    "merged_output_value",
    "seed_records",
    "row_record",
    "tuning_label",
    "surplus_numbers",
    "seeds_budget",
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


def fig2_records(rung: Rung, *, profile: str, run: str = "", read_from: str = "") -> list:
    """The Fig. 2 rows of one rung, each over all its seeds: the counts (``count_records``),
    the fractions, the seeds with a merging output group, Table 1 and App. C.2
    (``seed_records``); with its budget (``seeds_budget``) and ``run``, the recorded run's name
    ("" for this build; ``read_from``: the recorded run this build's rung was read from)."""
    R, seeds = len(rung.rows), [r.seed for r in rung.rows]
    every = seeds_budget(rung.steps, rung.T, seeds)
    kw = dict(profile=profile, run=run, budget=every, read_from=read_from)
    rows = count_records(list(rung.rows), **kw) + fraction_records(list(rung.rows), **kw)
    found = sum(r.merged > 0 for r in rung.rows)
    rows.append(row_record("fig2.merge_found", found, seeds=R, seeds_of=seeds, **kw))
    return rows + seed_records(list(rung.rows), **kw)


def fraction_records(rows: list, *, budget: str, profile: str, run: str = "", **kw) -> list:
    """The fractions of ``rows`` pruned to exactly 14 = 10 + 4 and that learned the construction
    (``members.fractions``), scored (``kw``: ``row_record``'s read_from, write). No interval:
    these rows' rule predates the runs, and an interval would change which of them decide
    (``verdict.undecided``); ``teacher_tables.show_fractions`` prints the Wilson intervals."""
    f, R = fractions(rows), len(rows)
    where = dict(seeds=R, seeds_of=[r.seed for r in rows], budget=budget, profile=profile)
    return [
        row_record(id_, f[key][0] / R, run=run, **where, **kw)
        for id_, key in (
            ("fig2.construction_counts_fraction", "construction_counts"),
            ("fig2.learned_fraction", "learned"),
        )
    ]


def tuning_label(seeds) -> str:
    """'tuning seeds 0-2 (they chose lr and weight decay)' where ``seeds`` holds seeds of the
    pilots behind the learning rate and weight decay (``TUNING_SEEDS``); '' where none."""
    tuned = sorted(int(s) for s in seeds if s in TUNING_SEEDS)
    if not tuned:
        return ""
    if len(tuned) == 1:
        return f"tuning seed {tuned[0]} (seeds 0-2 chose lr and weight decay)"
    span = tuned == list(range(tuned[0], tuned[-1] + 1)) and len(tuned) > 2
    named = f"{tuned[0]}-{tuned[-1]}" if span else ", ".join(map(str, tuned))
    return f"tuning seeds {named} (they chose lr and weight decay)"


def seeds_budget(steps: int, T: int, seeds) -> str:
    """``verdict.budget`` of Fig. 2 for ``seeds`` (a run's seeds), with ``tuning_label``
    appended where any of them tuned the optimiser: such rows are never held out."""
    text = verdict.budget("fig2", steps=steps, T=T, seeds=len(seeds))
    label = tuning_label(seeds)
    return f"{text}; {label}" if label else text


def row_record(
    id_, value, *, read_from: str = "", seeds_of=(), note: str = "", **kw
) -> scorecard.Record:
    """``scorecard.record`` (``kw``: its arguments), its note naming the tuning seeds among
    ``seeds_of`` (``tuning_label``) and, on a build row (no ``run``) computed from a recorded
    run (``read_from``) made before the row's rule (paper_values.json:
    ``rule_set_after_runs``), saying ``scorecard.RULE_AFTER``: it does not decide its claim,
    as the recorded run's own row would not."""
    late = scorecard.paper_values()[id_].get("rule_set_after_runs", ())
    rule = scorecard.RULE_AFTER if read_from and not kw.get("run") and read_from in late else ""
    note = "; ".join(t for t in (rule, tuning_label(seeds_of), note) if t)
    return scorecard.record(id_, value, note=note, **kw)


#: the count rows of Fig. 2A/B and the member row's attribute each reads
COUNTS = (
    ("fig2.hidden_after_pruning", "hidden"),
    ("fig2.output_after_pruning", "output"),
    ("fig2.lambda_one", "lam_one"),
    ("fig2.lambda_zero", "lam_zero"),
)


def count_values(rows: list) -> list[tuple[str, float, tuple[int, int], str]]:
    """(id, median over the seeds, (smallest, largest), note) of each count of Fig. 2A/B over
    every member of ``rows``; the note says how many seeds have exactly the paper's count."""
    if not rows:
        raise ValueError("no members")
    paper = scorecard.paper_values()
    out = []
    for id_, attr in COUNTS:
        v = [getattr(r, attr) for r in rows]
        want = paper[id_]["paper"]
        k = sum(x == want for x in v)
        note = f"{k} of {len(v)} seeds at the paper's {want}"
        out.append((id_, statistics.median(v), (min(v), max(v)), note))
    return out


def count_records(rows: list, *, budget: str, profile: str, run: str = "", **kw) -> list:
    """The rows of ``count_values``, scored (the median; its range over seeds as the interval;
    ``kw``: ``row_record``'s read_from, write)."""
    return [
        row_record(
            id_,
            v,
            interval=span,
            note=note,
            seeds_of=[r.seed for r in rows],
            seeds=len(rows),
            budget=budget,
            profile=profile,
            run=run,
            **kw,
        )
        for id_, v, span, note in count_values(rows)
    ]


def merged_output_value(rows: list) -> tuple[float, tuple[float, float], str]:
    """App. C.2 over seeds: (the share of ``rows`` with a merged output-gating group whose neuron
    is the construction's output neuron, ``analysis.selector_share`` at least SELECTOR_SHARE;
    its Wilson 95% interval; a note naming those seeds and counting every merged group)."""
    if not rows:
        raise ValueError("no members")
    found, groups, three, low, unsearched = [], 0, 0, [], []
    for r in rows:
        m = r.rev.merged
        shares = analysis.merged_selector_shares(m, r.rev.groups.one, r.rev.groups.zero)
        groups += len(shares)
        three += sum(len(g) == 3 for g in m.groups)
        low += [f"seed {r.seed} {sh:.2g}" for sh in shares if sh < SELECTOR_SHARE]
        if any(sh >= SELECTOR_SHARE for sh in shares):
            found.append(str(r.seed))
        if not getattr(r.rev, "merge_searched", True):
            unsearched.append(str(r.seed))
    k, R, S = len(found), len(rows), sum(r.merged > 0 for r in rows)
    note = (
        f"{k} of {R} seeds ({', '.join(found) or 'none'}); {groups} groups merged "
        f"({three} of three neurons) in {S} seed{'' if S == 1 else 's'}"
    )
    if low:
        note += f"; share below {SELECTOR_SHARE:g}: {', '.join(low)}"
    if unsearched:
        note += f"; merge not searched (too many output neurons): seeds {', '.join(unsearched)}"
    return k / R, analysis.wilson_interval(k, R), note


def seed_records(rows: list, *, budget: str, profile: str, run: str = "", **kw) -> list:
    """The rows over every seed of ``rows``: Table 1's medians (``members.held_out_values``)
    and App. C.2's merging over seeds (``merged_output_value``); ``kw``: ``row_record``'s
    read_from, write."""
    where = dict(seeds_of=[r.seed for r in rows], seeds=len(rows), budget=budget, **kw)
    where.update(profile=profile, run=run)
    out = [
        row_record(id_, value, note=note, **where)
        for id_, value, note in held_out_values(rows)
        if id_.startswith("table1.")  # its fig2 row counted groups, not seeds: replaced below
    ]
    value, interval, note = merged_output_value(rows)
    out.append(
        row_record("fig2.merged_is_output_neuron", value, interval=interval, note=note, **where)
    )
    return out


def surplus_numbers(rows: list) -> dict[str, str]:
    """The numbers the surplus chapter's prose quotes (name -> text, for ``glue``) over the
    members ``rows``: how many seeds, how many learned the construction, how many keep more
    hidden neurons after pruning than the construction's 14."""
    return {
        "surplus-seeds": str(len(rows)),
        "surplus-learned": str(sum(r.learned for r in rows)),
        "surplus-kept": str(sum(r.hidden > CONSTRUCTION[0] for r in rows)),
    }


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
