"""The printed tables and scorecard rows of the chapter "Teacher identification" (Sec. 4.1,
Fig. 2, Table 1): what ``members.member_rows`` and ``analysis.reverse_engineer`` found, for this
build's run and for the recorded runs.

    print_setup        the profile's student, sequences and training, against the paper's
    loss_line          the held-out loss, absolute and over the teacher's output variance
    prune_sweep        the pruned network's size and output change at each threshold (Fig. 2A)
    budget_text        a config's budget text (``surplus_ladder.seeds_budget``: tuning seeds named)
    read_from          the recorded run a build read (``experiments.run_or_recorded``), or ""
    show_fractions     the seeds pruned to 14 = 10 + 4 and that learned it: printed, scored
    merge_lines        each seed's output neurons and the groups merged (Fig. 2C)
    merge_records      ``fig2.merge_found``, Table 1 and App. C.2 over every seed, scored
    table1_records     Fig. 2A/B's counts over every seed (median) and Table 1's four numbers
                       of the first seed, scored
    paper_counts       the paper's (hidden, lam~1, lam~0, output) after pruning
    show_many_seeds    the recorded run of twenty held-out seeds, read and scored
    spectra_text       each group's state spectrum, the construction's first, then each seed's
    read_paper_runs    the provenance and state spectra of the recorded paper-budget runs
    drops_text         over those spectra: does the drop after the count exceed every ratio?
    drop_numbers       the same, as the numbers the prose quotes
    show_paper_run     one recorded paper-budget run (tuning seeds): its members, scored
    machines_text      the same seed trained on two machines, side by side
    wilson_numbers     how roughly n seeds pin a fraction down (the numbers the prose quotes)
"""

from __future__ import annotations

import dataclasses

from .. import analysis, experiments
from . import members, scorecard
from .surplus_ladder import (
    count_records,
    fraction_records,
    row_record,
    seed_records,
    seeds_budget,
    tuning_label,
)

__all__ = [
    "print_setup",
    "budget_text",
    "read_from",
    "loss_line",
    "prune_sweep",
    "show_fractions",
    "merge_lines",
    "merge_records",
    "table1_records",
    "paper_counts",
    "show_many_seeds",
    "spectra_text",
    "read_paper_runs",
    "drops_text",
    "drop_numbers",
    "show_paper_run",
    "machines_text",
    "wilson_numbers",
    "THRESHOLDS",
    "MANY_SEEDS",
]

#: the pruning thresholds of the sweep (Fig. 2A): is pruning lossless at each?
THRESHOLDS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
#: the recorded run of twenty held-out seeds of the quick configuration
MANY_SEEDS = "teacher-identification-quick-20-seeds"


def print_setup(profile: str, config, paper) -> None:
    """Print the student (n, m), the sequence length T, the training budget and AdamW's rate and
    weight decay of ``config`` (``experiments.teacher_identification_config(profile)``) beside
    the paper's (``paper``: the paper profile's config)."""
    tc = config.train
    print(f"profile: {profile}")
    print(f"student: n = {config.n} hidden, m = {config.m} output-gating neurons (paper: 100, 100)")
    print(f"sequences: T = {config.T} (paper: {paper.T})")
    print(f"training: {tc.steps:,} steps of batch {tc.batch_size} (paper: {paper.train.steps:,})")
    print(
        f"AdamW lr {tc.lr:g} -> {tc.eta_min:g} (cosine), weight decay {tc.weight_decay:g} "
        f"(paper profile: lr {paper.train.lr:g}, weight decay {paper.train.weight_decay:g})"
    )


def budget_text(config) -> str:
    """The budget of a teacher-identification ``config``'s rows over all its seeds
    (``surplus_ladder.seeds_budget``: its tuning seeds named, where it has any)."""
    return seeds_budget(config.train.steps, config.T, config.seeds)


def read_from(result) -> str:
    """The recorded run ``result`` was read from (``experiments.run_or_recorded``), or "" when
    it was trained or loaded from the cache: rows whose rule came after that run say so."""
    return result.path.name if result.provenance else ""


def loss_line(eval_loss: float, teacher_var: float) -> str:
    """``final held-out loss L (teacher output variance V, relative L / V)``."""
    return (
        f"final held-out loss {eval_loss:.3g} (teacher output variance {teacher_var:.3g}, "
        f"relative {eval_loss / teacher_var:.3g})"
    )


def prune_sweep(net, x, thresholds=THRESHOLDS) -> str:
    """A fixed-width table: at each pruning threshold, the hidden and output neurons kept by
    ``analysis.prune`` and the largest change of the output on the inputs ``x`` (B, T, d)."""
    lines = [f"{'threshold':>10} {'hidden':>7} {'output':>7} {'max |change of y|':>18}"]
    for tol in thresholds:
        pr = analysis.prune(net, tol)
        change = analysis.output_change(net, pr.net, x)
        lines.append(f"{tol:>10g} {pr.net.n:>7d} {pr.net.m:>7d} {change:>18.3g}")
    return "\n".join(lines)


def show_fractions(rows, **where) -> None:
    """Print how many of ``rows`` (``members.MemberRow``) prune to exactly 14 = 10 + 4 and how
    many learned the construction, with Wilson 95% intervals, and show their scored rows
    (``surplus_ladder.fraction_records``; ``where``: its budget, profile, run, read_from)."""
    f = members.fractions(rows)
    for label, key in (
        ("pruned to exactly 14 = 10 + 4", "construction_counts"),
        ("learned the construction", "learned"),
    ):
        k, R, (lo, hi) = f[key]
        print(f"{label}: {k} of {R} seeds (Wilson 95% interval {lo:.2f} to {hi:.2f})")
    scorecard.show(fraction_records(rows, **where), source=False)


def merge_lines(rows) -> str:
    """One line per member (``members.MemberRow``): its output neurons after pruning, whether
    the merge was searched, and the groups ``analysis.merge`` merged."""
    return "\n".join(
        f"seed {row.seed}: {row.output} output neurons, merge searched: "
        f"{row.rev.merge_searched}; groups merged: {row.rev.merged.groups or 'none'}"
        for row in rows
    )


def merge_records(
    rows, *, profile: str, budget: str, run: str = "", note: bool = False, read_from: str = ""
):
    """The row ``fig2.merge_found`` (members with a merged output group; ``note``: name their
    seeds), Table 1's medians and App. C.2's share of seeds (``surplus_ladder.seed_records``),
    scored; ``read_from``: the recorded run a build's rows were read from."""
    merged = [str(row.seed) for row in rows if row.merged]
    text = f"seeds with a merged group: {', '.join(merged) or 'none'}" if note else ""
    where = dict(profile=profile, budget=budget, run=run, read_from=read_from)
    seeds = [row.seed for row in rows]
    found = row_record(
        "fig2.merge_found", len(merged), seeds=len(rows), seeds_of=seeds, note=text, **where
    )
    return [found, *seed_records(rows, **where)]


def table1_records(
    rows,
    config,
    eval_loss: float,
    teacher_var: float,
    *,
    prune_tol: float,
    profile: str,
    read_from: str = "",
) -> list:
    """Fig. 2A/B's counts after pruning over every member of ``rows`` (``members.MemberRow``:
    the median, its range as the interval) and the first seed's Table 1 loss (``eval_loss``),
    Score KV, Score Q and polynomial distance, scored; ``read_from``: the recorded run the
    rows were read from, if any."""
    first = rows[0]
    seeds = [row.seed for row in rows]
    kw = dict(profile=profile, read_from=read_from)
    counts = count_records(rows, budget=budget_text(config), **kw)
    b1 = seeds_budget(config.train.steps, config.T, seeds[:1])
    change = max(row.rev.prune_change for row in rows)
    values = [
        (
            "table1.loss",
            eval_loss,
            f"relative to the teacher's variance: {eval_loss / teacher_var:.2g}",
        ),
        ("table1.score_kv", first.score_kv, ""),
        ("table1.score_q", first.score_q, ""),
        ("table1.poly_distance", first.rev.poly_distance, ""),
    ]
    own = (
        f"seed {first.seed}, the first of {len(rows)}; pruned at {prune_tol:g} (largest "
        f"output change over the seeds {change:.2g})"
    )
    return counts + [
        row_record(
            id_,
            v,
            seeds=1,
            seeds_of=seeds[:1],
            budget=b1,
            note=f"{own}; {note}" if note else own,
            **kw,
        )
        for id_, v, note in values
    ]


def paper_counts() -> tuple[int, int, int, int]:
    """The paper's counts after pruning (paper_values.json): hidden, lam ~ 1, lam ~ 0, output."""
    pv = scorecard.paper_values()
    keys = ("hidden_after_pruning", "lambda_one", "lambda_zero", "output_after_pruning")
    return tuple(pv[f"fig2.{k}"]["paper"] for k in keys)


def show_many_seeds(prune_tol: float, name: str = MANY_SEEDS) -> None:
    """Read the recorded run ``name`` (the quick configuration with twenty held-out seeds):
    print where it trained and its member table, and show its rows as the quick profile's
    (the fractions, Fig. 2A/B's counts, ``fig2.merge_found``, Table 1 and App. C.2, each over
    every seed); or say it is missing."""
    if name not in experiments.recorded_names():
        print(
            f"{name} is not recorded in this copy of the package; the command above trains "
            "and records it."
        )
        return
    run = experiments.recorded(name)
    rows = members.member_rows(run, prune_tol=prune_tol)
    print(
        f"recorded run {name}: {run.meta['hardware']['cpu']}, "
        f"{run.metrics['train_wall_time_s'] / 60:.0f} min of training"
    )
    print(members.member_table(rows, paper=paper_counts()))
    budget = budget_text(run.config)
    where = dict(profile="quick", run=name, budget=budget)  # the quick configuration's
    show_fractions(rows, **where)
    scorecard.show(count_records(rows, **where), source=False)
    scorecard.show(merge_records(rows, **where), source=False)


def spectra_text(construction, rows, x, counts: dict[str, int]) -> str:
    """The state spectrum of each group (``members.spectrum_lines``) of the construction
    (``construction``, grouped by its lam), then of each member's pruned network."""
    text, _ = members.spectrum_lines(
        "construction", construction, analysis.lam_groups(construction), x, counts
    )
    lines = [text]
    for row in rows:
        net = row.rev.pruned.net
        lines.append(members.spectrum_lines(f"seed {row.seed}", net, row.rev.groups, x, counts)[0])
    return "\n".join(lines)


def _run_lines(run, paper) -> list[str]:
    pc, meta, m = run.config, run.meta, run.metrics
    hw = meta["hardware"]
    resumed = m["resumed_from_step"]
    timing = (
        f"resumed once from its checkpoint at step {resumed:,}: the remaining "
        f"{pc.train.steps - resumed:,} steps took"
        if resumed
        else "training took"
    )
    where = (
        f"{hw['device_name']} (device {hw['device']}; host {hw['cpu']}"
        if hw["device"] != "cpu"
        else f"{hw['cpu']} (device cpu"
    )
    return [
        f"recorded run {run.path.name}: seeds {list(pc.seeds)}; the paper profile"
        f"{' with these seeds' if pc.seeds != paper.seeds else ''}: "
        f"{pc == dataclasses.replace(paper, seeds=pc.seeds)}",
        f"  n = m = {pc.n}, T = {pc.T}, {pc.train.steps:,} steps, lr {pc.train.lr:g}, "
        f"weight decay {pc.train.weight_decay:g}",
        f"  trained on {where}, {hw['cpu_count']} cores, {hw['torch_threads']} threads), "
        f"torch {meta['torch_version']}, finished {meta['created_utc']}; {timing} "
        f"{m['train_wall_time_s'] / 60:.0f} min",
        f"  code: hash {meta['code_hash'][:12]} (commit {run.provenance['commit'][:7]}); "
        f"today's package: {experiments.code_hash()[:12]}",
    ]


def read_paper_runs(runs, paper, x, counts: dict[str, int], *, prune_tol: float):
    """For each recorded paper-budget run of ``runs``: print its provenance (seeds, whether it
    is the paper profile, hardware, time, code) and the state spectra of its members. Returns
    ([(run, members.MemberRow)], [(largest ratio within the count, drop after it)] of every
    group with a surplus)."""
    found, drops = [], []
    for run in runs:
        for line in _run_lines(run, paper):
            print(line)
        for row in members.member_rows(run, prune_tol=prune_tol):
            found.append((run, row))
            net = row.rev.pruned.net
            text, surplus = members.spectrum_lines(
                f"paper seed {row.seed}", net, row.rev.groups, x, counts
            )
            print(text)
            drops += surplus
    return found, drops


def drops_text(drops) -> str:
    """Over ``drops`` ((largest ratio within the count, drop after it) per group with a
    surplus): whether every drop exceeds its group's ratios, the range of the drops and the
    largest ratio within; a blank line first."""
    if not drops:
        return "\nno spectrum has a surplus"
    return (
        f"\nin every spectrum with a surplus ({len(drops)}), the drop right after the "
        f"construction's count exceeds every ratio within it: "
        f"{all(drop > within for within, drop in drops)}; drops "
        f"{min(d for _, d in drops):.3g} to {max(d for _, d in drops):.3g}, "
        f"ratios within at most {max(w for w, _ in drops):.3g}"
    )


def drop_numbers(drops) -> dict[str, str]:
    """The numbers the prose quotes (name -> text, for ``glue``) over ``drops`` ((largest ratio
    within the count, drop after it) per group with a surplus): how many groups, in how many
    the drop exceeds every ratio within, in how many it exceeds ten."""
    return {
        "ti-drops-surplus": str(len(drops)),
        "ti-drops-above": str(sum(drop > within for within, drop in drops)),
        "ti-drops-over-ten": str(sum(drop > 10 for _, drop in drops)),
    }


def show_paper_run(run, rows, paper) -> None:
    """One recorded paper-budget run (``rows``: its ``members.MemberRow``), trained on the
    tuning seeds 0-2: its member table, Fig. 2A/B's counts over its seeds and its first seed's
    Table 1 rows; when the run is the paper profile (``paper``) they fill the recorded column,
    with the fractions, ``fig2.merge_found``, Table 1's medians and App. C.2 over its seeds; the
    other runs are shown only."""
    is_profile = run.config == paper
    name, c, first = run.path.name, run.config, rows[0]
    print(f"recorded run {name} (trained on {run.meta['hardware']['device']}):")
    label = tuning_label([row.seed for row in rows])
    if label:
        print(f"{label}: not held out")
    print(members.member_table(rows, paper=paper_counts()))
    every = seeds_budget(c.train.steps, c.T, [row.seed for row in rows])
    b1 = seeds_budget(c.train.steps, c.T, [first.seed])
    where = dict(profile="paper", write=is_profile, run=name)
    records = count_records(rows, budget=every, **where)
    for id_, ours in (
        ("table1.loss", run.metrics["eval_loss"][0]),
        ("table1.score_kv", first.score_kv),
        ("table1.score_q", first.score_q),
        ("table1.poly_distance", first.rev.poly_distance),
    ):
        records.append(row_record(id_, ours, seeds=1, seeds_of=[first.seed], budget=b1, **where))
    scorecard.show(records, source=False)
    if is_profile:
        where = dict(profile="paper", run=name, budget=every)
        show_fractions(rows, **where)
        scorecard.show(merge_records(rows, **where), source=False)


def machines_text(found) -> str:
    """One line per seed of ``found`` ([(run, members.MemberRow)]): for each machine that
    trained it, its counts after pruning and its normalised loss."""
    by_seed: dict[int, list[str]] = {}
    for run, row in found:
        by_seed.setdefault(row.seed, []).append(
            f"{run.meta['hardware']['device']}: {row.hidden} hidden = {row.lam_one} + "
            f"{row.lam_zero} (+ {row.between} between), {row.output} output, "
            f"loss/var {row.norm_loss:.1e}"
        )
    return "\n".join(f"seed {seed}: " + "; ".join(t) for seed, t in sorted(by_seed.items()))


def wilson_numbers(n: int) -> dict[str, str]:
    """The numbers the prose quotes (name -> text, for ``glue``): the upper end of the Wilson
    95% interval of 0 of ``n`` and the lower end of that of ``n`` of ``n``."""
    return {
        "ti-wilson-none-high": f"{analysis.wilson_interval(0, n)[1]:.2f}",
        "ti-wilson-all-low": f"{analysis.wilson_interval(n, n)[0]:.2f}",
    }
