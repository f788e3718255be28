"""Figures of the associative recall chapter (App. D.3, Fig. 7): accuracy and loss against
size, the key-value blocks in the layout of Fig. 7, and the squared-difference fit (the numbers
beside them: ``readings.recall``). ``LABELS``: the gatings' labels (legends, table headings).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..analysis.recall_algorithms import RecallAnalysis, squared_difference_fit
from ..constructions.recall_networks import compressed_neurons, naive_neurons
from ..models.gated_rnn import gated_rnn_forward

LABELS = {
    "io": "input-output gating",
    "side": "side gating",
    "io-ce": "input-output, cross-entropy",
}
_STYLE = {"io": ("C0", "o"), "side": ("C3", "s"), "io-ce": ("C2", "^")}


def plot_accuracy_loss(config, tensors) -> plt.Figure:
    """Held-out accuracy and loss against n for each gating: every seed (dots), seed mean (line).
    The loss panel shows the MSE-trained gatings only (the ablation's loss is a cross-entropy)."""
    fig, (ax_a, ax_l) = plt.subplots(1, 2, figsize=(7.5, 3.9), layout="constrained")
    for gating in config.gatings:
        color, marker = _STYLE[gating]
        t = tensors[gating]
        n = t["sizes"][:, 0].numpy()
        sizes = np.unique(n)
        panels = [(ax_a, "eval_accuracy")] + ([] if gating == "io-ce" else [(ax_l, "eval_loss")])
        for ax, key in panels:
            v = t[key].numpy().clip(min=1e-8)  # an exact network's MSE: drawn at 1e-8
            ax.scatter(n, v, color=color, marker=marker, s=14, alpha=0.5)
            means = [v[n == s].mean() for s in sizes]
            ax.plot(sizes, means, color=color, marker=marker, label=LABELS[gating])
    K, V = config.task.n_keys, config.task.n_values
    ticks = sorted({n for g in config.gatings for _, n in config.members(g)})
    for ax in (ax_a, ax_l):
        ax.axvline(
            naive_neurons(K, V), color="k", ls="--", lw=1, label=f"naive attention ({K * V})"
        )
        if K == V:
            c = compressed_neurons(K)
            ax.axvline(c, color="k", ls=":", lw=1, label=f"compressed side ({c})")
        ax.axvline(V + 1, color="gray", ls="-.", lw=1, label=f"squared difference ({V} + 1)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(s) for s in ticks])
        ax.set_xticks([], minor=True)
        ax.set_xlabel("hidden neurons n\n(= m for input-output gating)")
    ax_a.axhline(1 / V, color="gray", lw=0.8)
    ax_a.set_ylabel("held-out accuracy")
    fig.legend(*ax_a.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=9)
    ax_l.set_yscale("log")
    ax_l.set_ylabel("held-out MSE")
    return fig


def plot_blocks(a: RecallAnalysis, title: str = "") -> plt.Figure:
    """The key-value block of every key-value neuron (double-centred pair increments, values
    down, keys across) in the order of ``a.hidden_order``: the layout of Fig. 7."""
    kv = [i for i in a.hidden_order if i in a.values.kv]
    cols = min(len(kv), 6) or 1
    rows = max(1, -(-len(kv) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(1.25 * cols, 1.8 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, i in zip(axes.flat, kv, strict=False):
        B = a.blocks.blocks[i].numpy()
        v = float(np.abs(B).max()) or 1.0
        ax.imshow(B, cmap="RdBu_r", vmin=-v, vmax=v)
        neg = float(a.blocks.negative_peak[i])
        ax.set_title(f"λ {float(a.lam[i]):.2f}\n-min/max {neg:.2f}", fontsize=9)
    fig.suptitle(title or "key-value blocks (rows: values, columns: keys)", fontsize=10)
    fig.tight_layout()
    return fig


def plot_sd_fit(rnn, batch, label: str = "", ax=None) -> float:
    """Draw the outputs at the query step against the fitted a_o - b_o (c[k(o)] - c[kq])^2;
    returns the fit's R^2."""
    with torch.no_grad():
        q = gated_rnn_forward(batch.x, rnn.params())[:, -1]
    fit = squared_difference_fit(q, batch)
    k_of = torch.empty_like(batch.keys)
    k_of[torch.arange(len(k_of))[:, None], batch.values] = batch.keys
    diff = (fit.code[k_of] - fit.code[batch.query_key][:, None]) ** 2
    model = fit.a - fit.b * diff
    right = k_of == batch.query_key[:, None]
    if ax is None:
        _, ax = plt.subplots(figsize=(4.6, 3.6), layout="constrained")
    ax.scatter(model[~right], q[~right], s=4, alpha=0.3, label="other values")
    ax.scatter(model[right], q[right], s=4, alpha=0.3, color="C3", label="queried value")
    lo, hi = float(q.min()), float(q.max())
    ax.plot([lo, hi], [lo, hi], "k--", lw=1)
    ax.set(xlabel="a_o - b_o (c[k(o)] - c[kq])²", ylabel="network output y_o")
    ax.set_title(f"{label}: R² = {fit.r2:.3f}", fontsize=10)
    ax.legend(fontsize=9, markerscale=3)
    return fit.r2
