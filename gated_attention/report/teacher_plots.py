"""Figures of the teacher-student chapters ("Teacher identification", "The surplus neurons"):
the neurons' contributions (Fig. 2A), the kernels of merged output-gating neurons (Fig. 2C),
the surplus against the budget and the optimiser comparisons (ours).

Glossary (code name -> paper symbol -> section):
    contributions  products of weight norms that pruning compares with a threshold   Fig. 2A
    kernel         K_o = sum_m D[o, m] sym(W_out1[m] W_out2[m]^T) of a group       Fig. 2C
    surplus        hidden neurons after pruning beyond the construction's 14        ours
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..analysis.boundary import Network
from ..analysis.merging import output_kernels
from ..readings.optimiser_members import construction_target, member_rows

#: the three contributions of ``analysis.contributions``, with the panel titles of Fig. 2A
CONTRIBUTIONS = (
    ("hidden_in", "hidden: |W_in1| |W_in2|"),
    ("hidden_out", "hidden: read by outputs"),
    ("output", "output: |W_out1| |W_out2| |D|"),
)


def plot_contributions(contributions: Mapping[str, torch.Tensor], prune_tol: float) -> plt.Figure:
    """Fig. 2A: each contribution of ``analysis.contributions`` sorted in decreasing order, one
    panel each (log scale, values below 1e-30 drawn at 1e-30), and the pruning threshold."""
    fig, axes = plt.subplots(1, 3, figsize=(7.5, 3.2), sharey=True, layout="constrained")
    for ax, (key, label) in zip(axes, CONTRIBUTIONS, strict=True):
        v = np.sort(np.asarray(contributions[key]))[::-1]
        ax.semilogy(np.arange(len(v)), np.maximum(v, 1e-30), ".")
        ax.axhline(prune_tol, color="k", ls="--", lw=1, label=f"threshold {prune_tol:g}")
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("neuron (sorted)")
    axes[0].set_ylabel("contribution")
    axes[0].legend(fontsize=9, loc="best")
    fig.suptitle("Fig. 2A: neurons sorted by the size of their contribution", fontsize=11)
    return fig


def plot_merge_kernels(net: Network, group: Sequence[int]) -> plt.Figure:
    """Fig. 2C: the kernel of the first output of each output-gating neuron of ``group`` and of
    their sum, as n x n heat maps over the hidden neurons (each with its own symmetric colour
    scale; blue negative, red positive)."""
    group = list(group)
    parts = [output_kernels(net, [j])[0] for j in group]
    total = output_kernels(net, group)[0]
    panels = len(parts) + 1
    fig, axes = plt.subplots(
        1, panels, figsize=(min(7.5, 2.3 * panels), 2.8), layout="constrained", squeeze=False
    )
    titles = [f"neuron {j}" for j in group] + ["sum"]
    for ax, k, title in zip(axes[0], parts + [total], titles, strict=True):
        v = float(k.abs().max()) or 1.0
        ax.imshow(k.numpy(), cmap="RdBu_r", vmin=-v, vmax=v, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("hidden neuron", fontsize=9)
        ax.tick_params(labelsize=9)
    axes[0][0].set_ylabel("hidden neuron", fontsize=9)
    fig.suptitle("Fig. 2C: kernels (output y1) of the merged neurons and their sum", fontsize=11)
    return fig


def plot_surplus(rungs) -> plt.Figure:
    """Each seed's surplus (grey) and the mean over seeds (line) against the steps, log 2;
    ``rungs``: ``readings.surplus_ladder.Rung``."""
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


#: colour, line style, width (AdamW's wide and pale, so that a line on top of it stays visible)
_STYLE = {
    "adamw": ("C0", "-", 3.5),
    "adamw_strong": ("C1", "-.", 1.8),
    "adam_l2": ("C3", "--", 1.6),
    "sgd_l2": ("C2", ":", 2.0),
}
#: how the members' figure names the optimisers
_SHORT = {"adamw": "AdamW", "adam_l2": "Adam + L2", "sgd_l2": "SGD + L2"}


def plot_members_counts(result):
    """Hidden, lam ~ 1 and lam ~ 0 counts after pruning and the held-out loss against the steps
    of an ``OptimiserMembersConfig`` result: one column per member, one line per arm; dashed
    grey: the construction's counts."""
    config, t = result.config, result.tensors
    steps = t["steps"].numpy()
    rows = member_rows(result)
    h, one, zero = construction_target(config)
    P = len(config.members)
    fig, axes = plt.subplots(
        4, P, figsize=(2.8 * P + 1, 8), layout="constrained", sharex=True, squeeze=False
    )
    for p, row in enumerate(rows):
        for i, label in enumerate(config.labels):
            opt, _, wd = config.arm(label)
            name = f"{_SHORT.get(opt, opt)}, wd {wd:g}"
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
    for k, name in enumerate(["hidden", "lam ~ 1", "lam ~ 0", "held-out loss"]):
        axes[k, 0].set_ylabel(name)
    axes[0, 0].legend(fontsize=8)
    return fig
