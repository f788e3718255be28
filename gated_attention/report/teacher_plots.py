"""Figures of the teacher-student chapters ("Teacher identification", "How many neurons"):
the neurons' contributions (Fig. 2A), the kernels of merged output-gating neurons (Fig. 2C) and
the loss against the student's size (Fig. 3A/B).

Glossary (code name -> paper symbol -> section):
    contributions  products of weight norms that pruning compares with a threshold   Fig. 2A
    kernel         K_o = sum_m D[o, m] sym(W_out1[m] W_out2[m]^T) of a group       Fig. 2C
    Transition     n*: the smallest size from which the loss stays below a threshold Fig. 3A/B

Every function draws what it is given (or reads off the network it is given) and returns the
figure; the chapters show it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..analysis.boundary import Network, network
from ..analysis.merging import merge, output_kernels
from ..constructions.gated_rnn import construct_rnn
from ..models.attention import LinearSelfAttention

__all__ = [
    "plot_contributions",
    "planted_merge_group",
    "merge_figure_group",
    "plot_merge_kernels",
]

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


def planted_merge_group(teacher: LinearSelfAttention) -> tuple[Network, list[int]]:
    """The symmetric construction of ``teacher`` with output-gating neuron 0 split into three
    neurons that together are one neuron in disguise; returns (the network, the three indices).

    (a.h)(b.h) = ((a+b).h)^2/4 - ((a-b).h)^2/4: two neurons with rank-1 kernels, the second split
    once more into 0.7 and 0.3 of its readout (the planted group of
    tests/test_analysis_merging.py). The network computes the same function as the construction;
    none of the three alone has the construction's pattern, their sum does.
    """
    p = network(construct_rnn(teacher, "symmetric"))
    a, b, d0 = p.W_out1[0], p.W_out2[0], p.D[:, 0]
    w1 = torch.stack([(a + b) / 2, (a - b) / 2, (a - b) / 2])
    w2 = torch.stack([(a + b) / 2, -(a - b) / 2, -(a - b) / 2])
    q = dataclasses.replace(
        p,
        W_out1=torch.cat([p.W_out1[1:], w1]),
        W_out2=torch.cat([p.W_out2[1:], w2]),
        D=torch.cat([p.D[:, 1:], torch.stack([d0, 0.7 * d0, 0.3 * d0], dim=1)], dim=1),
    )
    return q, [q.m - 3, q.m - 2, q.m - 1]


def merge_figure_group(rows, teacher: LinearSelfAttention) -> tuple[Network, list[int], str]:
    """The group of output-gating neurons Fig. 2C draws: the first group merged in any member
    of ``rows`` (``members.MemberRow``, in order) with its pruned network, or, when none
    merged, the planted group of ``planted_merge_group(teacher)``. Returns (the network, the
    group's indices, the sentence that says which it is)."""
    merged = [row for row in rows if row.merged]
    if merged:
        r = merged[0].rev
        group = r.merged.groups[0]
        return (
            r.pruned.net,
            group,
            f"the figure shows a trained network's merged group: seed {merged[0].seed}, output "
            f"neurons {group} of its pruned network (relative error {r.merged.errors[0]:.2g})",
        )
    net, group = planted_merge_group(teacher)
    return (
        net,
        group,
        "Fig. 2C is NOT reproduced in this build: no output-gating group of any trained "
        "network merges. The figure shows a PLANTED group instead (the symmetric "
        "construction with its output neuron 0 split into three), to show what a merge "
        f"looks like; analysis.merge finds it: {merge(net, rtol=1e-8).groups}",
    )


def plot_merge_kernels(net: Network, group: Sequence[int], output: int = 0) -> plt.Figure:
    """Fig. 2C: the kernel of output ``output`` of each output-gating neuron of ``group`` and of
    their sum, as n x n heat maps over the hidden neurons (each with its own symmetric colour
    scale; blue negative, red positive)."""
    group = list(group)
    parts = [output_kernels(net, [j])[output] for j in group]
    total = output_kernels(net, group)[output]
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
    fig.suptitle(
        f"Fig. 2C: kernels (output y{output + 1}) of the merged neurons and their sum", fontsize=11
    )
    return fig
