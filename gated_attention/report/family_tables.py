"""Figures and tables of the architecture chapters (Fig. 4A/B): loss against parameter count per
family, the learning-rate sweep, and a summary table at the largest parameter count."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch
from matplotlib.ticker import NullFormatter

from ..analysis.family_losses import PREMISE, curves, late_fall, setup_rows, unstable
from ..models.family_registry import family

__all__ = [
    "CANNOT_DECIDE",
    "chosen_rates",
    "cannot_decide_text",
    "fall_table",
    "members_table",
    "premise_text",
    "record_numbers",
    "score_rows",
    "setup_bar",
    "straddled",
    "plot_budgets",
    "plot_loss_vs_params",
    "pilot_table",
    "setup_table",
    "sweep_table",
    "summary_table",
    "unstable_text",
]

_STYLE = {
    "gated": ("C0", "o", "-"),
    "dense": ("C0", "s", "--"),
    "lstm": ("C3", "v", "-"),
    "gru": ("C1", "^", "-"),
    "lru": ("C2", "D", "-"),
    "lru_inout": ("C4", "P", "-"),
    "lru_inout_mlp": ("C7", "X", ":"),
    "mamba": ("C5", "*", "-"),
}


def plot_loss_vs_params(config, tensors, key="eval_loss", *, ylabel="loss", line=None, ax=None):
    """Seed mean (markers, line) and min-max over seeds (band) of each family's final loss
    against its parameter count, log-log; ``line``: (value, label) drawn as a horizontal line."""
    own = ax is None
    if own:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    for c in curves(config, tensors, key):
        color, marker, style = _STYLE.get(c.family, ("k", "o", "-"))
        ax.plot(c.counts, c.mean, style, color=color, marker=marker, label=family(c.family).label)
        ax.fill_between(c.counts, c.low, c.high, color=color, alpha=0.12, linewidth=0)
    if line is not None:
        ax.axhline(line[0], color="k", linestyle="-.", linewidth=1, label=line[1])
    ax.set(xscale="log", yscale="log", xlabel="parameters", ylabel=ylabel)
    targets = sorted(config.targets)  # the matched counts, labelled plainly (no crowded minors)
    ax.set_xticks(targets, [f"{t:,}" for t in targets])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    if own:
        ax.figure.tight_layout()
    return ax.figure


def plot_budgets(runs, key="eval_loss", *, ylabel="loss", line=None):
    """``plot_loss_vs_params`` of each (title, config, tensors) of ``runs`` side by side, the same
    y axis, one legend below: the same run at two budgets, say."""
    fig, axes = plt.subplots(
        1, len(runs), figsize=(7.5, 4.2), sharey=True, squeeze=False, layout="constrained"
    )
    for ax, (title, config, tensors) in zip(axes[0], runs, strict=True):
        plot_loss_vs_params(config, tensors, key, ylabel=ylabel, line=line, ax=ax)
        ax.get_legend().remove()
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis="x", labelsize=8, rotation=45)
    for ax in axes[0][1:]:
        ax.set_ylabel("")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=4, fontsize=9)
    return fig


def sweep_table(config, tensors, key="eval_loss") -> str:
    """A Markdown table: seed-mean loss of each family at each rate of the sweep."""
    rates = list(config.lr_grid)
    head = "| family | " + " | ".join(f"lr {r:g}" for r in rates) + " |"
    lines = [head, "|---|" + "---|" * len(rates)]
    for fam in config.families:
        cells = []
        for r in rates:
            k = [i for i, g in enumerate(config.groups()) if g[0] == fam and g[2] == r][0]
            cells.append(f"{float(tensors[key][k].nan_to_num(nan=float('inf')).mean()):.3g}")
        lines.append(f"| {family(fam).label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_table(config, tensors, key="eval_loss") -> str:
    """A Markdown table: per family, width, parameters, learning rate, the seed mean and range
    of the loss at the largest parameter count, and the cost of a training step."""
    lines = [
        "| family | width | parameters | lr | loss (mean) | loss (min - max) | ms / step |",
        "|---|---|---|---|---|---|---|",
    ]
    groups = config.groups()
    top = max(config.targets)
    for k, (fam, target, lr) in enumerate(groups):
        if target != top:
            continue
        v = tensors[key][k].nan_to_num(nan=float("inf"))
        lines.append(
            f"| {family(fam).label} | {int(tensors['widths'][k])} | {int(tensors['counts'][k])} "
            f"| {lr:g} | {float(v.mean()):.3g} | {float(v.min()):.2g} - {float(v.max()):.2g} "
            f"| {1000 * float(tensors['step_time'][k]):.1f} |"
        )
    return "\n".join(lines)


def fall_table(config, tensors) -> str:
    """One line per family: how much its training loss (largest size, seed mean) fell over the
    last fifth of training (``analysis.family_losses.late_fall``)."""
    lines = [f"{'family':<20} {'fall over the last fifth of training':>38}"]
    for fam in config.families:
        lines.append(f"{family(fam).label:<20} {100 * late_fall(config, tensors, fam):37.1f}%")
    return "\n".join(lines)


def unstable_text(config, tensors, key="eval_loss", limit: float | None = 1.0) -> str:
    """Which groups diverged or ran unstable at their rate (``analysis.family_losses.unstable``),
    a family per line; a row whose ratio involves one measures that, not what it learned."""
    bad = unstable(config, tensors, key, limit)
    what = "non-finite" + (f" or above {limit:g}" if limit is not None else "")
    if not bad:
        return f"no seed ended with a {what} loss"
    lines = [f"seeds whose final loss is {what} (diverged or unstable at the family's rate):"]
    for fam in dict.fromkeys(f for f, _, _, _ in bad):
        groups = ", ".join(f"{t:,} ({k} of {n})" for f, t, k, n in bad if f == fam)
        lines.append(f"  {family(fam).label}: at {groups} parameters")
    return "\n".join(lines)


def chosen_rates(config, lrs, edge: list[str]) -> str:
    """The rate each family trains at, a family per line, and which sit at the grid's top."""
    lines = [f"{'family':<20} {'learning rate':>14}"]
    lines += [
        f"{family(f).label:<20} {lr:14g}{'  (top of the grid)' if f in edge else ''}"
        for f, lr in lrs
    ]
    return "\n".join(lines)


def setup_table(config, tensors, gd_loss: float, gd_ood_loss: float) -> str:
    """A Markdown table of the Fig. 4B setup check (``analysis.family_losses.setup_rows``): per
    family
    its width, parameters, chosen rate, held-out loss over one optimal GD step's exact loss in
    distribution and out of it (seed mean, then each seed), and the late fall of its training
    loss (seed mean, last fifth of training against the fifth before)."""
    lines = [
        "| family | width | parameters | lr | in distribution / GD | OOD / GD "
        "| training loss fall, last fifth |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in setup_rows(config, tensors, gd_loss, gd_ood_loss):
        edge = " (edge of the grid)" if r.at_grid_edge else ""
        seeds_in = ", ".join(f"{v:.3g}" for v in r.in_dist)
        seeds_ood = ", ".join(f"{v:.3g}" for v in r.ood)
        lines.append(
            f"| {family(r.family).label} | {r.width} | {r.count} | {r.lr:g}{edge} "
            f"| **{r.in_dist_mean:.3g}** ({seeds_in}) | **{r.ood_mean:.3g}** ({seeds_ood}) "
            f"| {100 * r.fall:.1f}% |"
        )
    return "\n".join(lines)


def pilot_table(runs, gd_loss: float) -> str:
    """A Markdown table of short-budget pilots (``experiments.setup_pilots``): per run (a pair
    (PilotConfig, tensors)) its family, its change, its steps, its held-out loss over one
    optimal GD step's exact loss ``gd_loss``, and its training loss over ``gd_loss`` in the
    logged windows (at most five, evenly spaced, the last window last)."""
    if not gd_loss > 0:
        raise ValueError(f"the GD loss must be positive, got {gd_loss!r}")
    lines = [
        "| family | change | steps | held-out loss / GD | training loss / GD, by window |",
        "|---|---|---|---|---|",
    ]
    for config, tensors in runs:
        loss = float(tensors["eval_loss"].nan_to_num(nan=float("inf"))[0]) / gd_loss
        curve = tensors["train_curve"]
        if curve.numel() > 5:  # five windows at most: the end of each fifth of the budget
            curve = curve[torch.linspace(0, curve.numel() - 1, 6).round().long()[1:]]
        curve = ", ".join(f"{float(v) / gd_loss:.3g}" for v in curve)
        lines.append(
            f"| {family(config.family).label} | {config.change} | {config.train.steps:,} "
            f"| **{loss:.3g}** | {curve} |"
        )
    return "\n".join(lines)


def setup_bar() -> float:
    """The bar of the Fig. 4B setup check (paper_values.json, ``fig4b.setup.*``: in-distribution
    loss over one GD step's at most this): the bar a member of Fig. 4B must meet to count."""
    from .scorecard import paper_values

    bars = {v["tolerance"] for k, v in paper_values().items() if k.startswith("fig4b.setup.")}
    if len(bars) != 1:
        raise ValueError(f"the fig4b.setup rows must share one bar, found {sorted(bars)}")
    return bars.pop()


def members_table(ms: dict, scale: float = 1.0, *, why: str) -> str:
    """A Markdown table of the members of each family at the largest parameter count
    (``analysis.family_losses.members``): each seed's loss over ``scale`` (an excluded seed
    struck through), what was excluded and why (``why``: the not-learned seeds), and the median
    and the mean over the seeds kept (the rows use the median) beside the mean over every seed
    (the measure the rows used before; +inf when a seed diverged)."""
    lines = [
        "| family | each seed | excluded | median (kept) | mean (kept) | mean (every seed) |",
        "|---|---|---|---|---|---|",
    ]
    for m in ms.values():
        seeds = ", ".join(
            f"~~{v / scale:.3g}~~" if d or n else f"{v / scale:.3g}"
            for v, d, n in zip(m.losses, m.diverged, m.not_learned, strict=True)
        )
        lines.append(
            f"| {family(m.family).label} | {seeds} | {m.excluded(why) or 'none'} "
            f"| **{m.median / scale:.3g}** | {m.mean / scale:.3g} | {m.mean_all / scale:.3g} |"
        )
    return "\n".join(lines)


#: how the note of a row whose interval straddles its criterion's threshold says so
CANNOT_DECIDE = "seeds cannot decide"
_WORDS = dict(enumerate("zero one two three four five six seven eight nine ten".split()))


def straddled(id: str, interval) -> float | None:
    """The threshold of the criterion of ``id`` (paper_values.json; max or range) that
    ``interval`` (lo, hi) straddles, so that the row would pass at one end and miss at the
    other; None when the interval lies on one side of every threshold (or it is None):
    ``scorecard.straddled`` on the entry's criterion."""
    from .scorecard import paper_values
    from .scorecard import straddled as on_criterion

    entry = paper_values()[id]
    return on_criterion(entry["criterion"], entry.get("tolerance"), interval)


def score_rows(
    rows: dict,
    *,
    profile: str,
    seeds: int,
    budget: str,
    run: str = "",
    before: dict | None = None,
) -> list:
    """``scorecard.record`` of each (id -> ``analysis.family_losses.Row``) with its note and
    its interval over seeds; a row whose interval straddles its threshold (``straddled``) has
    the note "three seeds cannot decide" (the count of ``seeds`` in words) added.

    ``before`` (id -> value, ``analysis.family_rules.values_before``): each row's value under
    the rule in force when ``run`` was made, handed to ``scorecard.record``, where the same
    status lets a row whose rule came after the run decide. It is left out where the row's
    premise fails (undecided whatever the rule then gave) or the value before is NaN (that
    rule's premise failed, or it had no value)."""
    from . import scorecard

    out = []
    for id, r in rows.items():
        note, t = r.note, straddled(id, r.interval)
        if t is not None:
            said = f"{_WORDS.get(seeds, seeds)} {CANNOT_DECIDE}: the interval straddles {t:g}"
            note = f"{note}; {said}" if note else said
        then = (before or {}).get(id)
        if then is not None and (math.isnan(then) or r.note.startswith(PREMISE)):
            then = None
        out.append(
            scorecard.record(
                id,
                r.value,
                profile=profile,
                seeds=seeds,
                note=note,
                run=run,
                budget=budget,
                interval=r.interval,
                before=then,
            )
        )
    return out


def cannot_decide_text(records: list) -> str:
    """Which rows' seeds cannot decide them (their 95% interval over seeds straddles the
    threshold, ``score_rows``), a row per line with its value and interval; or that none."""
    from .scorecard import ours_cell

    shown = [r for r in records if CANNOT_DECIDE in r.note]
    if not shown:
        return "the 95% interval over seeds of every scored row lies on one side of its threshold"
    lines = [
        "rows whose 95% interval over seeds straddles the threshold (the seeds cannot decide):"
    ]
    for r in shown:
        said = next(part for part in r.note.split("; ") if CANNOT_DECIDE in part)
        lines.append(f"  {r.id}: {ours_cell(r)} ({said})")
    return "\n".join(lines)


def premise_text(rows: dict) -> str:
    """Which rows' premise fails (a family of the row kept half of its seeds or fewer, so the
    row is NaN and the claim cannot be decided at this budget), a row per line; or that none
    does."""
    failed = {id: r.note for id, r in rows.items() if r.note.startswith(PREMISE)}
    if not failed:
        return (
            "the premise of every row holds: each family it compares kept a majority of its seeds"
        )
    lines = ["the claim's premise fails at this budget (these rows are NaN, not scored):"]
    lines += [f"  {id}: {note}" for id, note in failed.items()]
    return "\n".join(lines)


def _said(r) -> str:
    """What a scored row says, in words: its value and interval, then a pass, a miss, or why it
    is undecided (its premise; its rule set after its run, unless the rule in force then gives
    the same status, then that value), and whether its seeds cannot decide it."""
    from .scorecard import RULE_AFTER, SAME_BEFORE, ours_cell
    from .verdict import PREMISE_FAILS

    parts = r.note.split("; ")
    premise = next((p for p in parts if p.startswith(PREMISE_FAILS)), None)
    then = SAME_BEFORE.split("; ", 1)[1].split("{", 1)[0]  # "the rule in force then gives "
    same = next((p for p in parts if p.startswith(then)), None)
    if premise is not None:
        said = f"undecided: {premise.split(': ')[1]}"
    else:
        said = {"pass": "a pass"}.get(r.status, "a miss")
        if same is not None:
            value = same[len(then) :].split(", ", 1)[0]
            said += f" (the rule in force when the run was made gives {value}, {said} too)"
        elif RULE_AFTER in parts:
            said += ", undecided all the same: its rule was set after this run"
    straddle = next((p for p in parts if CANNOT_DECIDE in p), None)
    if straddle is not None:
        said += f" ({straddle})"
    return f"{ours_cell(r)}, {said}"


def record_numbers(records: list, prefix: str, members: dict = (), scale: float = 1.0) -> dict:
    """The words the prose quotes from scored Fig. 4 rows (name -> text, for ``glue``): for each
    record ``<prefix>-<row>`` (the id after its figure, "_" as "-"): its value, its interval
    and what it says ("0.401 [0.304, 4.7], a miss (three seeds cannot decide: ...)"); for each
    family of ``members`` (``analysis.family_losses.Members``) ``<prefix>-<family>-kept``, the
    seeds that learned ("2 of 3"), and ``<prefix>-<family>-mean-all``, the mean over every seed
    over ``scale`` (the rule before the medians)."""
    out = {f"{prefix}-{r.id.split('.', 1)[1].replace('_', '-')}": _said(r) for r in records}
    for f, m in dict(members).items():
        key = f"{prefix}-{f.replace('_', '-')}"
        out[f"{key}-kept"] = f"{len(m.kept)} of {len(m.losses)}"
        out[f"{key}-mean-all"] = f"{m.mean_all / scale:.3g}"
    return out
