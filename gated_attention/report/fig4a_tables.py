"""The chapter "Which RNNs learn attention" (Sec. 4.3, Fig. 4A): its profile line, the captions
of its tables, and the recorded run at a longer budget, read with the tables of
``family_tables`` and scored with the rows of ``analysis.family_losses.fig4a_rows``.

    profile_text     the profile's d, T, seeds, steps and targets, against the paper profile's
    table1           the rate search at one parameter target, caption first
    table3           each family's seeds at the largest target (struck through: excluded)
    show_longer_run  a recorded run of Fig. 4A: provenance, Tables 4 to 6, its rows (with their
                     values under the rule in force when it was made), its falls; returns its
                     scored rows and members (for ``family_tables.record_numbers``)
    search_minutes   how long a recorded run's rate search trained (the number the prose quotes)
"""

from __future__ import annotations

from ..analysis.family_losses import WORSE_THAN_ZERO, fig4a_rows, values_before
from .family_tables import (
    cannot_decide_text,
    chosen_rates,
    fall_table,
    members_table,
    premise_text,
    score_rows,
    summary_table,
    sweep_table,
    unstable_text,
)

__all__ = ["profile_text", "table1", "table3", "show_longer_run", "search_minutes"]


def profile_text(profile: str, config, paper) -> str:
    """Three lines: the profile, d, T (the paper profile's ``paper``), seeds, steps and batch
    (the paper profile's steps) and the parameter targets of ``config``
    (``experiments.architectures_config(profile, "teacher")``)."""
    tc = config.train
    return (
        f"profile: {profile}; d = {config.d}, T = {config.T} (paper profile: {paper.T}), "
        f"{len(config.seeds)} seeds,\n{tc.steps:,} steps of batch {tc.batch_size} (paper "
        f"profile: {paper.train.steps:,}),\nparameter targets {list(config.targets)}"
    )


def table1(sweep, tensors) -> str:
    """Table 1 in Markdown, caption first: each family's normalised held-out loss after the
    sweep's steps at its one target, per learning rate (``family_tables.sweep_table``)."""
    caption = (
        f"**Table 1.** Normalised held-out loss after {sweep.train.steps:,} steps at "
        f"{sweep.targets[0]:,} parameters, per learning rate."
    )
    return caption + "\n\n" + sweep_table(sweep, tensors)


def table3(members: dict, *, caption: str | None = None) -> str:
    """Table 3 (or ``caption``'s table) in Markdown, caption first: each family's seeds at the
    largest parameter count, normalised held-out loss, a seed worse than predicting zero struck
    through (``family_tables.members_table``)."""
    caption = caption or (
        "**Table 3.** Each family's seeds at the largest parameter count (normalised held-out "
        "loss; a seed struck through is excluded)."
    )
    return caption + "\n\n" + members_table(members, why=WORSE_THAN_ZERO)


def search_minutes(name: str) -> str:
    """The minutes the rate search of the recorded run ``name`` (``<config name>-lr-cpu``)
    took, whole; "n/a" when it is not recorded."""
    from .. import experiments

    if name not in experiments.recorded_names():
        return "n/a"
    return f"{experiments.recorded(name).meta['wall_time_s'] / 60:.0f}"


def show_longer_run(name: str, run, sweep, paper) -> tuple[list, dict]:
    """Show the recorded Fig. 4A run ``name`` (``run``, a longer budget): its provenance against
    the paper profile ``paper``, its rate search (Table 4, when recorded as ``<config
    name>-lr-cpu``), the rate of each family (those at the top of ``sweep``'s grid marked),
    Table 5 at its largest target, its seeds (Table 6), its rows (paper column, as rows of
    ``name``, each with its value under the rule in force when the run was made:
    ``values_before``), whose premise fails, which its seeds cannot decide, which seeds
    diverged, and the late falls. Returns its scored rows (``scorecard.Record``) and members."""
    from IPython.display import Markdown, display

    from .. import experiments
    from ..experiments.architectures import at_grid_edge
    from . import scorecard, verdict
    from .runs import provenance_line

    rc, RT = run.config, run.tensors
    print(provenance_line(name, run, paper))
    if f"{rc.name}-lr-cpu" in experiments.recorded_names():
        s = experiments.recorded(f"{rc.name}-lr-cpu")
        head = (
            f"**Table 4.** Normalised held-out loss, rate search on seed "
            f"{s.config.seeds[0]}, {s.config.train.steps:,} steps.\n\n"
        )
        display(Markdown(head + sweep_table(s.config, s.tensors)))
    print(chosen_rates(rc, rc.lrs, at_grid_edge(sweep, rc.lrs)))
    top = max(rc.targets)
    head = f"**Table 5.** The recorded run at {top:,} parameters.\n\n"
    display(Markdown(head + summary_table(rc, RT)))
    rows, members = fig4a_rows(rc, RT)
    caption = f"**Table 6.** The recorded run's seeds at {top:,} parameters, as Table 3."
    display(Markdown(table3(members, caption=caption)))
    n = len(rc.seeds)
    budget = verdict.budget("fig4a", steps=rc.train.steps, T=rc.T, seeds=n)
    then = values_before(lambda rule: fig4a_rows(rc, RT, rule=rule)[0], run.meta["created_utc"])
    shown = score_rows(rows, profile="paper", seeds=n, budget=budget, run=name, before=then)
    scorecard.show(shown)
    print(premise_text(rows))
    print(cannot_decide_text(shown))
    print(unstable_text(rc, RT))
    print(fall_table(rc, RT))
    return shown, members
