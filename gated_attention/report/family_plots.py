"""The figures of the architecture chapters (Fig. 4A/B): each family's final loss against its
parameter count, log-log (``plot_loss_vs_params``), or several runs side by side (``plot_budgets``).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import NullFormatter

from ..analysis.family_losses import curves
from ..models.family_registry import family

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
