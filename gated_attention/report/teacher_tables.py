"""The printed tables and scorecard rows of the chapter "Teacher identification" (Sec. 4.1,
Fig. 2, Table 1): what ``members.member_rows`` and ``analysis.reverse_engineer`` found, for this
build's run and for the recorded runs.

    print_setup        the profile's student, sequences and training, against the paper's
    loss_line          the held-out loss, absolute and over the teacher's output variance
    prune_sweep        the pruned network's size and output change at each threshold (Fig. 2A)
    merge_lines        each held-out seed's output neurons and the groups merged (Fig. 2C)
    merge_records      ``fig2.merge_found`` and Table 1 over every held-out seed, scored
    table1_records     Fig. 2A/B's counts and Table 1's four numbers of the first seed, scored
    paper_counts       the paper's (hidden, lam~1, lam~0, output) after pruning
    show_many_seeds    the recorded run of twenty held-out seeds, read and scored
    spectra_text       each group's state spectrum, the construction's first, then each seed's
    read_paper_runs    the provenance and state spectra of the recorded paper-budget runs
    drops_text         over those spectra: does the drop after the count exceed every ratio?
    show_paper_run     one recorded paper-budget run: its members, scored
    machines_text      the same seed trained on two machines, side by side
    wilson_numbers     how roughly n seeds pin a fraction down (the numbers the prose quotes)
"""

from __future__ import annotations

import dataclasses

from .. import analysis, experiments
from . import members, scorecard, verdict
from .surplus_ladder import held_out_records

__all__ = [
    "print_setup",
    "loss_line",
    "prune_sweep",
    "merge_lines",
    "merge_records",
    "table1_records",
    "paper_counts",
    "show_many_seeds",
    "spectra_text",
    "read_paper_runs",
    "drops_text",
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


def merge_lines(rows) -> str:
    """One line per member (``members.MemberRow``): its output neurons after pruning, whether
    the merge was searched, and the groups ``analysis.merge`` merged."""
    return "\n".join(
        f"seed {row.seed}: {row.output} output neurons, merge searched: "
        f"{row.rev.merge_searched}; groups merged: {row.rev.merged.groups or 'none'}"
        for row in rows
    )


def merge_records(rows, *, profile: str, budget: str, run: str = "", note: bool = False):
    """The row ``fig2.merge_found`` (members with a merged output group; ``note``: name their
    seeds) and Table 1 over every member (``surplus_ladder.held_out_records``), scored."""
    merged = [str(row.seed) for row in rows if row.merged]
    text = f"seeds with a merged group: {', '.join(merged) or 'none'}" if note else ""
    where = dict(profile=profile, budget=budget, run=run)
    found = scorecard.record("fig2.merge_found", len(merged), seeds=len(rows), note=text, **where)
    return [found, *held_out_records(rows, **where)]


def table1_records(
    rev, config, eval_loss: float, teacher_var: float, *, prune_tol: float, profile: str
) -> list:
    """The first seed's rows (``rev``: its ``analysis.reverse_engineer``): Fig. 2A/B's counts
    after pruning and Table 1's loss, Score KV, Score Q and polynomial distance, scored."""
    budget = verdict.budget("fig2", steps=config.train.steps, T=config.T, seeds=1)
    c = rev.groups.counts()
    first = (
        f"seed {config.seeds[0]} of {len(config.seeds)} (all: the next section); threshold "
        f"{prune_tol:g}, output change {rev.prune_change:.2g}"
    )
    rows = [
        ("fig2.hidden_after_pruning", rev.pruned.net.n, first),
        ("fig2.output_after_pruning", rev.pruned.net.m, ""),
        ("fig2.lambda_one", c["one"], ""),
        ("fig2.lambda_zero", c["zero"], ""),
        (
            "table1.loss",
            eval_loss,
            f"relative to the teacher's variance: {eval_loss / teacher_var:.2g}",
        ),
        ("table1.score_kv", rev.score_kv, ""),
        ("table1.score_q", rev.score_q, ""),
        ("table1.poly_distance", rev.poly_distance, ""),
    ]
    return [
        scorecard.record(id_, ours, profile=profile, seeds=1, budget=budget, note=note)
        for id_, ours, note in rows
    ]


def paper_counts() -> tuple[int, int, int, int]:
    """The paper's counts after pruning (paper_values.json): hidden, lam ~ 1, lam ~ 0, output."""
    pv = scorecard.paper_values()
    keys = ("hidden_after_pruning", "lambda_one", "lambda_zero", "output_after_pruning")
    return tuple(pv[f"fig2.{k}"]["paper"] for k in keys)


def show_many_seeds(prune_tol: float, name: str = MANY_SEEDS) -> None:
    """Read the recorded run ``name`` (the quick configuration with twenty held-out seeds):
    print where it trained and its member table, and show its rows as the quick profile's
    (the fractions, ``fig2.merge_found`` and Table 1 over every seed); or say it is missing."""
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
    c = run.config
    budget = verdict.budget("fig2", steps=c.train.steps, T=c.T, seeds=len(rows))
    where = dict(profile="quick", run=name, budget=budget)  # the quick configuration's
    members.show_member_fractions(rows, paper_counts()[:3], **where)
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


def show_paper_run(run, rows, paper) -> None:
    """One recorded paper-budget run (``rows``: its ``members.MemberRow``): its member table and
    its first seed's rows (Fig. 2A/B, Table 1); when the run is the paper profile (``paper``)
    they fill the recorded column, with the fractions, ``fig2.merge_found`` and Table 1 over
    every seed; the other runs are shown only."""
    is_profile = run.config == paper
    print(f"recorded run {run.path.name} (trained on {run.meta['hardware']['device']}):")
    print(members.member_table(rows, paper=paper_counts()))
    c, first = run.config, rows[0]
    b1 = verdict.budget("fig2", steps=c.train.steps, T=c.T, seeds=1)
    name = run.path.name if is_profile else ""
    values = [
        ("fig2.hidden_after_pruning", first.hidden),
        ("fig2.output_after_pruning", first.output),
        ("fig2.lambda_one", first.lam_one),
        ("fig2.lambda_zero", first.lam_zero),
        ("table1.loss", run.metrics["eval_loss"][0]),
        ("table1.score_kv", first.score_kv),
        ("table1.score_q", first.score_q),
        ("table1.poly_distance", first.rev.poly_distance),
    ]
    records = [
        scorecard.record(id_, ours, profile="paper", seeds=1, write=is_profile, run=name, budget=b1)
        for id_, ours in values
    ]
    scorecard.show(records, source=False)
    if is_profile:
        bR = verdict.budget("fig2", steps=c.train.steps, T=c.T, seeds=len(rows))
        where = dict(profile="paper", run=run.path.name, budget=bR)
        members.show_member_fractions(rows, paper_counts()[:3], **where)
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
