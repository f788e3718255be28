"""Why the surplus neurons survive (the surplus-neurons chapter; ours, not the paper's): the
consolidation test of every trained member as a plain-text table, and the single-member
optimiser comparison (``experiments.optimiser_comparison``) as a table and a figure of the pruned
counts against the steps; the chapter's five-member comparison is ``report.optimiser_members``.

Glossary (code name -> meaning):
    consolidation_table   one row per member: ``analysis.consolidation.Consolidation``
    consolidate_members   the consolidation of every recorded paper-budget member and every seed
                          of this build, with the weight decay each trained with
    folded_text           how many members fold into fewer neurons that weight decay prefers
    optimiser_table       one row per optimiser of an ``OptimiserComparisonConfig`` result
    plot_optimiser_counts hidden, lam ~ 1, lam ~ 0 counts and the training loss against steps
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from ..analysis.consolidation import Consolidation, construction_counts

__all__ = [
    "consolidation_table",
    "consolidate_members",
    "folded_text",
    "optimiser_table",
    "plot_optimiser_counts",
    "LABELS",
]

#: how the chapter names the optimisers
LABELS = {
    "adamw": "AdamW (decoupled decay)",
    "adam_l2": "Adam + L2 in the gradient",
    "sgd_l2": "SGD + L2",
}
#: colour, line style, width (AdamW's wide and pale, so that a line on top of it stays visible)
_STYLE = {"adamw": ("C0", "-", 3.5), "adam_l2": ("C3", "--", 1.6), "sgd_l2": ("C2", ":", 2.0)}


def consolidation_table(rows: Sequence[tuple[str, Consolidation]]) -> str:
    """A plain-text table: per member (label, ``Consolidation``) the hidden neurons before (of
    them key-value + query; the rest have lam in between and are kept) and after, the energy
    of the states beyond the top r directions of each group, the worst product-fit error,
    the relative output change, the loss (MSE to the teacher) before and after, the weight
    penalty (raw before, balanced before and after) and
    the break-even weight decay (above it the consolidated network has the smaller
    loss + wd/2 |theta|^2, both balanced)."""
    head = (
        f"{'member':<24} {'hidden':>19} {'energy beyond r':>17} {'worst fit':>17} "
        f"{'|dy|/|y|':>8} {'loss before':>11} {'loss after':>10} {'penalty':>7} "
        f"{'balanced':>15} {'break-even':>10}"
    )
    sub = (
        f"{'':<24} {'n (kv + q) -> n':>19} {'kv / q':>17} {'kv / q':>17} {'':>8} {'':>11} "
        f"{'':>10} {'raw':>7} {'before -> after':>15} {'wd':>10}"
    )
    lines = [head, sub]
    for label, c in rows:
        g = {grp.name: grp for grp in c.groups}
        kv, q = g.get("key-value"), g.get("query")
        sizes = f"{c.n_before} ({kv.size if kv else 0} + {q.size if q else 0}) -> {c.n_after}"
        beyond = f"{_beyond(kv)} / {_beyond(q)}"
        fits = f"{_fit(kv)} / {_fit(q)}"
        balanced = f"{c.balanced_penalty_before:.1f} -> {c.balanced_penalty_after:.1f}"
        lines.append(
            f"{label:<24} {sizes:>19} {beyond:>17} {fits:>17} {c.output_change:>8.1e} "
            f"{c.loss_before:>11.1e} {c.loss_after:>10.1e} {c.penalty_before:>7.1f} "
            f"{balanced:>15} {c.break_even_weight_decay:>10.1e}"
        )
    return "\n".join(lines)


def _beyond(group) -> str:
    return "-" if group is None else f"{1.0 - group.kept_energy:.1e}"


def _fit(group) -> str:
    return "-" if group is None else f"{group.worst_fit_error:.1e}"


def _first_at_most(steps, counts, target: int):
    hits = [int(s) for s, c in zip(steps, counts, strict=True) if int(c) <= target]
    return hits[0] if hits else None


def optimiser_table(result) -> str:
    """One row per optimiser: learning rate and weight decay, the pruned counts (hidden = lam~1
    + lam~0, output) at the start and the end, the first recorded step with at most the
    construction's hidden neurons, the last recorded training loss and the held-out loss."""
    config, t, m = result.config, result.tensors, result.metrics
    steps = t["steps"].tolist()
    first = config.optimisers[0]
    d = t["start"]["W_in1"].shape[1] - 1
    c = construction_counts(d)
    target = c["one"] + c["zero"]
    n, one, zero, out = t[first]["counts"][0].tolist()
    lines = [
        f"start (step 0): {n} hidden = {one} + {zero}, {out} output; "
        f"the construction: {target} = {c['one']} + {c['zero']}",
        f"{'optimiser':<26} {'lr':>6} {'wd':>7} {'end: hidden = kv + q, out':>26} "
        f"{'first step <= ' + str(target):>16} {'train loss':>10} {'held-out':>9}",
    ]
    for name in config.optimisers:
        counts = t[name]["counts"]
        n, one, zero, out = counts[-1].tolist()
        hit = _first_at_most(steps, counts[:, 0], target)
        lines.append(
            f"{LABELS.get(name, name):<26} {config.lr(name):>6g} {config.weight_decay(name):>7g} "
            f"{f'{n} = {one} + {zero}, {out}':>26} {'-' if hit is None else f'{hit:,}':>16} "
            f"{float(t[name]['train_loss'][-1]):>10.2g} {m['eval_loss'][name]:>9.2g}"
        )
    return "\n".join(lines)


def plot_optimiser_counts(result, title: str | None = None):
    """Pruned counts (hidden, lam ~ 1, lam ~ 0) and the training loss against the steps, one line
    per optimiser; dashed grey: the construction's counts. Returns the figure."""
    config, t = result.config, result.tensors
    steps = t["steps"].numpy()
    d = t["start"]["W_in1"].shape[1] - 1
    c = construction_counts(d)
    refs = [c["one"] + c["zero"], c["one"], c["zero"]]
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.2), layout="constrained")
    panels = ["hidden (after pruning)", "lam ~ 1 (key-value)", "lam ~ 0 (query)"]
    for k, (ax, label, ref) in enumerate(zip(axes[:3], panels, refs, strict=True)):
        for name in config.optimisers:
            color, ls, lw = _STYLE.get(name, ("k", "-", 1.6))
            ax.plot(
                steps,
                t[name]["counts"][:, k].numpy(),
                color=color,
                ls=ls,
                lw=lw,
                alpha=0.5 if lw > 3 else 1.0,
                label=LABELS.get(name, name),
            )
        ax.axhline(ref, color="0.5", ls="--", lw=0.8)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("steps continued")
        ax.set_ylim(bottom=0)
        ax.yaxis.get_major_locator().set_params(integer=True)
    axes[0].legend(fontsize=8)
    ax = axes[3]
    for name in config.optimisers:
        color, ls, lw = _STYLE.get(name, ("k", "-", 1.6))
        loss = t[name]["train_loss"].numpy()
        ax.semilogy(steps[1:], np.maximum(loss[1:], 1e-30), color=color, ls=ls, lw=min(lw, 1.5))
    ax.set_title("training loss (window mean)", fontsize=10)
    ax.set_xlabel("steps continued")
    if title is None:
        title = f"{config.run}, member {config.member}, continued at T = {config.T}"
    fig.suptitle(title, fontsize=11)
    return fig


def consolidate_members(config, result, *, profile: str, prune_tol: float):
    """``analysis.consolidation.consolidate_student`` of every member of the recorded
    paper-budget runs (``teacher-identification-paper*``), then of every seed of this build
    (``config``, ``result``: ``experiments.teacher_identification_config(profile)`` and its
    run). Returns ([(label, Consolidation)], [the weight decay each member trained with])."""
    from .. import analysis, experiments
    from ..analysis import consolidation

    def one(trained, teacher, T):
        net = analysis.network(trained)
        return consolidation.consolidate_student(net, teacher, T=T, prune_tol=prune_tol)

    rows, wds = [], []
    for name in experiments.recorded_names():
        if not name.startswith("teacher-identification-paper"):
            continue
        rec = experiments.recorded(name)
        for trained, seed in zip(rec.students(), rec.config.seeds, strict=True):
            cons = one(trained, rec.config.task(seed).teacher, rec.config.T)
            rows.append((f"{name.removeprefix('teacher-identification-')} seed {seed}", cons))
            wds.append(rec.config.train.weight_decay)
    for seed, trained in zip(config.seeds, result.students(), strict=True):
        rows.append((f"{profile} seed {seed}", one(trained, config.task(seed).teacher, config.T)))
        wds.append(config.train.weight_decay)
    return rows, wds


def folded_text(rows: Sequence[tuple[str, Consolidation]], wds: Sequence[float]) -> str:
    """The members of ``rows`` that consolidation folds into fewer neurons with an output
    change below 1% and a break-even weight decay below the member's own (``wds``), counted
    and named; a blank line first."""
    folded = [
        label
        for (label, cons), wd in zip(rows, wds, strict=True)
        if cons.n_after < cons.n_before
        and cons.output_change < 1e-2
        and cons.break_even_weight_decay < wd
    ]
    return (
        "\nfolded into fewer neurons, output change below 1%, and preferred by loss + wd/2 "
        f"|theta|^2 at the member's own weight decay: {len(folded)} of {len(rows)} "
        f"({', '.join(folded) or 'none'})"
    )
