"""The chapter "Other RNNs in context" (Sec. 5.3, Fig. 4B): its captions, tables, scorecard rows
and the numbers its prose quotes. Does each family learn in-context regression before it is
read out of distribution (the setup check, ours), why not (the pilots), and the runs of Fig. 4B.

    table1 / table2       the setup check (``experiments.setup_check_config``) and its rate search
    setup_records         the check's scorecard rows, one per family (``fig4b.setup.*_learns``)
    learners_text         which families learn in-context regression on that budget, and which not
    table3                the pilots (``experiments.pilot_set_config``)
    pilot_loss            one pilot's held-out loss over one GD step's
    table4 / outcome_text the LRU families drawn larger (``setup_check_lru_init_config``)
    table5                the rate search of the Fig. 4B runs
    members_caption       the caption of Table 7 (this build) or Table 9 (a recorded run)
    late_rate_text        where the cosine schedule stands over the last fifth of training
    show_longer_run       a recorded run of Fig. 4B at a longer budget: Tables 8, 9 and its rows,
                          with their values under the rule in force when it was made (returns
                          its scored rows and members, for ``record_numbers``)
    setup_numbers, pilot_numbers, lru_init_numbers
                          the numbers the prose quotes (name -> text, for myst-nb glue)

Glossary (code name -> meaning):
    gd_in    7/74, the exact in-distribution loss of one optimal GD step (App. D.2)
    gd_ood   14/74, the same step's exact loss with the variance of W doubled
    bar      the setup check's bar (``family_tables.setup_bar``): in-distribution loss over
             one GD step's at most this
"""

from __future__ import annotations

from ..analysis.family_losses import fig4b_rows, setup_rows, values_before
from .family_tables import (
    cannot_decide_text,
    chosen_rates,
    fall_table,
    members_table,
    pilot_table,
    premise_text,
    score_rows,
    setup_table,
    sweep_table,
    unstable_text,
)

__all__ = [
    "table1",
    "table2",
    "setup_records",
    "learners_text",
    "table3",
    "pilot_loss",
    "table4",
    "outcome_text",
    "table5",
    "members_caption",
    "late_rate_text",
    "show_longer_run",
    "setup_numbers",
    "pilot_numbers",
    "lru_init_numbers",
    "SETUP_RUN",
    "PILOTS_RUN",
    "LRU_INIT_RUN",
]

#: the recorded runs of the setup check, its pilots and its variant with larger LRU maps
SETUP_RUN = "fig4b-setup-quick"
PILOTS_RUN = "fig4b-setup-pilots-quick"
LRU_INIT_RUN = "fig4b-setup-lru-init-quick"


def table1(config, tensors, gd_in: float, gd_ood: float, source: str) -> str:
    """Table 1 in Markdown, caption first: each family of the setup check (``config``: a
    ``SetupCheckConfig``, ``tensors`` its results) after its budget, held-out loss over one GD
    step's in distribution and out of it (``family_tables.setup_table``); ``source`` says where
    the run comes from. The caption gives the zero predictor's score on both axes."""
    tc = config.train
    caption = (
        f"**Table 1.** Each family after {tc.steps:,} steps of batch {tc.batch_size} "
        f"(warm-up {tc.warmup_steps} steps, then cosine), {len(config.seeds)} seeds "
        f"({source}): held-out query loss over the exact loss of one optimal GD step, "
        "in distribution ($7/74$) and out of it ($14/74$); seed mean in bold, then each "
        f"seed. The zero predictor scores {0.5 / gd_in:.2f} and {1.0 / gd_ood:.2f}."
    )
    return caption + "\n\n" + setup_table(config, tensors, gd_in, gd_ood)


def table2(config, tensors) -> str:
    """Table 2 in Markdown, caption first: the setup check's rate search on its held-out seed
    (``tensors["sweep_eval_loss"]``, one row per family, one column per rate)."""
    caption = (
        f"**Table 2.** The rate search on held-out seed {config.lr_seed}: in-distribution "
        f"held-out loss after the same {config.train.steps:,} steps, per rate."
    )
    searched = {"eval_loss": tensors["sweep_eval_loss"]}
    return caption + "\n\n" + sweep_table(config.sweep(), searched)


def setup_records(
    config, tensors, gd_in: float, gd_ood: float, *, source: str, run: str = SETUP_RUN
) -> list:
    """``scorecard.record`` of the row ``fig4b.setup.<family>_learns`` of each family of the
    setup check: its seed-mean in-distribution loss over one GD step's, noted with ``source``,
    its rate and its OOD ratio; stored as rows of the recorded run ``run`` (quick profile)."""
    from . import scorecard, verdict

    budget = verdict.budget("fig4b.setup", steps=config.train.steps, seeds=len(config.seeds))
    return [
        scorecard.record(
            f"fig4b.setup.{r.family}_learns",
            r.in_dist_mean,
            profile="quick",
            seeds=len(config.seeds),
            note=f"{source}; lr {r.lr:g}; OOD / GD {r.ood_mean:.3g}",
            run=run,
            budget=budget,
        )
        for r in setup_rows(config, tensors, gd_in, gd_ood)
    ]


def learners_text(records, families) -> str:
    """Two lines: the families whose ``fig4b.setup.<family>_learns`` record passes (learn
    in-context regression on this budget), then those of ``families`` that do not."""
    learns = [r.id.split(".")[2].removesuffix("_learns") for r in records if r.status == "pass"]
    rest = [f for f in families if f not in learns]
    return (
        f"learn in-context regression on this budget: {', '.join(learns) or 'none'}\n"
        f"do not: {', '.join(rest) or 'none'}"
    )


def table3(pilot_set, pilots, gd_in: float, source: str) -> str:
    """Table 3 in Markdown, caption first: every pilot of ``pilots`` (the result of
    ``experiments.run(pilot_set)`` or its recording) with its held-out loss and training
    curve over one GD step's (``family_tables.pilot_table``)."""
    first = pilot_set.pilots[0]
    caption = (
        f"**Table 3.** Pilots on held-out seed {first.seed}, batch "
        f"{first.train.batch_size}, one change at a time ({source}): held-out "
        "loss and training loss (at the end of each fifth of the budget) over "
        "the exact loss of one GD step."
    )
    return caption + "\n\n" + pilot_table(pilots.config.pairs(pilots.tensors), gd_in)


def pilot_loss(pairs, gd_in: float, family: str, change: str, steps: int) -> float:
    """The held-out loss over ``gd_in`` of the one pilot of ``pairs`` ((PilotConfig, tensors)
    pairs) of ``family`` whose change reads ``change`` and that trains ``steps`` steps; a
    ValueError unless exactly one pilot matches."""
    found = [
        t for c, t in pairs if c.family == family and c.change == change and c.train.steps == steps
    ]
    if len(found) != 1:
        raise ValueError(
            f"{len(found)} pilots of {family!r} with change {change!r} and {steps} steps"
        )
    return float(found[0]["eval_loss"][0]) / gd_in


def table4(config, tensors, gd_in: float, gd_ood: float, source: str) -> str:
    """Table 4 in Markdown, caption first: the LRU families of the setup check with their
    linear maps drawn ``config.init_scales["lru"]`` times larger, as Table 1."""
    caption = (
        f"**Table 4.** The LRU families as in Table 1, their linear maps drawn "
        f"{dict(config.init_scales)['lru']:.3g} times larger ({source}): held-out loss over "
        "the exact loss of one GD step, in distribution and out of it."
    )
    return caption + "\n\n" + setup_table(config, tensors, gd_in, gd_ood)


def outcome_text(config, tensors, gd_in: float, gd_ood: float, bar: float) -> str:
    """One line per family of a setup check: whether its seed-mean in-distribution loss over
    one GD step's is at most ``bar`` (learns in-context regression at this initial scale), with
    both ratios."""
    lines = []
    for r in setup_rows(config, tensors, gd_in, gd_ood):
        outcome = "learns" if r.in_dist_mean <= bar else "does not learn"
        lines.append(
            f"{r.family}: {outcome} in-context regression at this initial scale "
            f"({r.in_dist_mean:.3g} x GD in distribution, {r.ood_mean:.3g} x GD out of it)"
        )
    return "\n".join(lines)


def table5(sweep, tensors) -> str:
    """Table 5 in Markdown, caption first: the rate search of the Fig. 4B runs (``sweep``:
    ``experiments.architectures_sweep_config``), in-distribution held-out loss per rate."""
    caption = (
        f"**Table 5.** In-distribution held-out loss after {sweep.train.steps:,} steps "
        f"at {sweep.targets[0]:,} parameters, per learning rate."
    )
    return caption + "\n\n" + sweep_table(sweep, tensors)


def _why(bar: float) -> str:
    return f"above {bar:g} x GD in distribution"


def members_caption(bar: float, *, config=None) -> str:
    """The caption of Table 7 (``config`` None: this build's run) or of Table 9 (``config``:
    the recorded run's, whose largest parameter count it names)."""
    if config is None:
        return (
            "**Table 7.** Each family's seeds at the largest parameter count: "
            "OOD loss over one GD step's (struck through: excluded, its "
            f"in-distribution loss above {bar:g} x one GD step's)."
        )
    return (
        f"**Table 9.** The recorded run's seeds at {max(config.targets):,} parameters, as Table 7."
    )


def members_text(members, gd_ood: float, bar: float, *, config=None) -> str:
    """Table 7 (or 9, see ``members_caption``) in Markdown, caption first: each family's seeds
    at the largest parameter count, OOD loss over ``gd_ood`` (``family_tables.members_table``)."""
    table = members_table(members, gd_ood, why=_why(bar))
    return members_caption(bar, config=config) + "\n\n" + table


def late_rate_text(train) -> str:
    """Where the cosine schedule of ``train`` (a ``TrainConfig``) stands at the start of the
    last fifth of training, as a share of its peak, and where it ends."""
    from ..engine import cosine_lr

    left = cosine_lr(int(0.8 * train.steps), train) / train.lr
    return (
        f"learning rate at the start of the last fifth: {left:.1%} of its peak, "
        f"annealed to {train.eta_min / train.lr:.0e} of it by the end"
    )


def show_longer_run(
    name: str, run, sweep, gd_in: float, gd_ood: float, bar: float
) -> tuple[list, dict]:
    """Show the recorded Fig. 4B run ``name`` (``run``, a longer budget): its provenance, its
    rate search (Table 8, when recorded as ``<config name>-lr-cpu``), the rate of each family
    (those at the top of ``sweep``'s grid marked), its seeds at the largest size (Table 9),
    its scorecard rows (paper column, as rows of ``name``, each with its value under the rule
    in force when the run was made: ``values_before``), whose premise fails, which its seeds
    cannot decide, which seeds diverged, and the late fall of each family's training loss.
    Returns its scored rows (``scorecard.Record``) and members."""
    from IPython.display import Markdown, display

    from .. import experiments
    from ..experiments.architectures import at_grid_edge
    from . import scorecard, verdict
    from .runs import provenance_line

    rc, RT = run.config, run.tensors
    print(provenance_line(name, run))
    if f"{rc.name}-lr-cpu" in experiments.recorded_names():
        s = experiments.recorded(f"{rc.name}-lr-cpu")
        head = (
            f"**Table 8.** In-distribution loss, rate search on seed "
            f"{s.config.seeds[0]}, {s.config.train.steps:,} steps.\n\n"
        )
        display(Markdown(head + sweep_table(s.config, s.tensors)))
    print(chosen_rates(rc, rc.lrs, at_grid_edge(sweep, rc.lrs)))
    rows, members, _ = fig4b_rows(rc, RT, gd_ood, gd_in=gd_in, bar=bar)
    display(Markdown(members_text(members, gd_ood, bar, config=rc)))

    def under(rule):
        return fig4b_rows(rc, RT, gd_ood, gd_in=gd_in, bar=bar, rule=rule)[0]

    then = values_before(under, run.meta["created_utc"])
    n = len(rc.seeds)
    budget = verdict.budget("fig4b", steps=rc.train.steps, seeds=n)
    shown = score_rows(rows, profile="paper", seeds=n, budget=budget, run=name, before=then)
    scorecard.show(shown)
    print(premise_text(rows))
    print(cannot_decide_text(shown))
    print(unstable_text(rc, RT, "ood_loss", limit=None))
    print(fall_table(rc, RT))
    return shown, members


def _pct(ratio: float) -> str:
    """How far a ratio to one GD step lies from 1, in whole per cent: 1.08 and 0.92 are 8%."""
    return f"{abs(100 * (ratio - 1)):.0f}%"


def setup_numbers(config, tensors, gd_in: float, gd_ood: float) -> dict[str, str]:
    """The numbers the prose quotes from Table 1 (name -> text, for ``glue``): the diagonal
    gated RNN's seed mean, each seed and its distance to GD; how far the GRU ends below GD in
    distribution and the GRU and LSTM above it out of it; the range of the LRU families' seed
    means; and the zero predictor's score."""
    rows = {r.family: r for r in setup_rows(config, tensors, gd_in, gd_ood)}
    gated, lrus = rows["gated"], [rows[f] for f in config.families if f.startswith("lru")]
    return {
        "fig4b-gated-in": f"{gated.in_dist_mean:.3g}",
        "fig4b-gated-low": f"{min(gated.in_dist):.3g}",
        "fig4b-gated-high": f"{max(gated.in_dist):.3g}",
        "fig4b-gated-above": _pct(gated.in_dist_mean),
        "fig4b-gru-below": _pct(rows["gru"].in_dist_mean),
        "fig4b-gru-ood-above": _pct(rows["gru"].ood_mean),
        "fig4b-lstm-ood-above": _pct(rows["lstm"].ood_mean),
        "fig4b-lru-low": f"{min(r.in_dist_mean for r in lrus):.2g}",
        "fig4b-lru-high": f"{max(r.in_dist_mean for r in lrus):.2g}",
        "fig4b-zero": f"{0.5 / gd_in:.2f}",
    }


def pilot_numbers(pairs, gd_in: float) -> dict[str, str]:
    """The numbers the prose quotes from Table 3 (name -> text, for ``glue``): the gated RNN
    with the readout of Sec. 5.2 after a fifth of the budget and after all of it (distance to
    GD), the LRU at rate 1e-3 over the whole budget, and the LRU drawn sqrt 3 and 3 times
    larger over the whole budget."""
    readout = "lr 0.01, warm-up 200, readout_scale 0.1"
    scaled = "lr 0.01, warm-up 200, init_scale"

    def loss(family: str, change: str, steps: int) -> float:
        return pilot_loss(pairs, gd_in, family, change, steps)

    return {
        "fig4b-pilot-readout-fifth": _pct(loss("gated", readout, 1000)),
        "fig4b-pilot-readout-all": _pct(loss("gated", readout, 5000)),
        "fig4b-pilot-lr1e-3": f"{loss('lru', 'lr 0.001, warm-up 200', 5000):.2g}",
        "fig4b-pilot-sqrt3": f"{loss('lru', f'{scaled} 1.73', 5000):.2g}",
        "fig4b-pilot-scale3": f"{loss('lru', f'{scaled} 3', 5000):.3g}",
    }


def lru_init_numbers(config, tensors, gd_in: float, gd_ood: float) -> dict[str, str]:
    """The numbers the prose quotes from Table 4 (name -> text, for ``glue``): LRU In+Out's
    seed means in and out of distribution; the LRU's loss on the held-out seed of the rate
    search at its chosen rate and its scored seeds' mean; the MLP variant's two seeds."""
    rows = {r.family: r for r in setup_rows(config, tensors, gd_in, gd_ood)}
    lru, mlp, inout = rows["lru"], rows["lru_inout_mlp"], rows["lru_inout"]
    groups = config.sweep().groups()
    k = [i for i, g in enumerate(groups) if g[0] == "lru" and g[2] == lru.lr]
    searched = float(tensors["sweep_eval_loss"][k[0]].mean()) / gd_in
    return {
        "fig4b-inout-in": f"{inout.in_dist_mean:.2f}",
        "fig4b-inout-ood": f"{inout.ood_mean:.2f}",
        "fig4b-lru-searched": f"{searched:.2f}",
        "fig4b-lru-rate": f"{lru.lr:.0e}".replace("e-0", "e-"),
        "fig4b-lru-scored": f"{lru.in_dist_mean:.2g}",
        "fig4b-mlp-low": f"{min(mlp.in_dist):.3g}",
        "fig4b-mlp-high": f"{max(mlp.in_dist):.3g}",
    }
