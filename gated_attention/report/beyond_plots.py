"""Figures of the chapter "Beyond the paper": output-gating neurons against d, the
capped-memory error law, and what capped training does (the law and rows: ``readings.beyond``).

Glossary (code name -> symbol):
    x        T (1 - lam_max), the memory deficit of a capped key-value neuron
    e_p(x)   the constant-input error for T -> infinity at fixed x, p banks:
             int_0^1 (1 - exp(-x u))^p du  (``readings.beyond.law``)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from ..readings.beyond import law


def plot_output_counts(
    ds: Sequence[int],
    counts: Mapping[str, Sequence[int]],
    trained: Mapping[str, Sequence[int]] | None = None,
) -> plt.Figure:
    """Output-gating neurons against d, one line per construction (``counts``: label ->
    m per d), and the pruned counts of trained students at d = 4 (``trained``: label ->
    counts), drawn as points spread a little around d = 4."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    markers = iter("os^vD")
    for label, m in counts.items():
        ax.plot(ds, m, marker=next(markers), label=label)
    if trained:
        for k, (label, ms) in enumerate(trained.items()):
            ms = np.asarray(ms, dtype=float)
            jitter = 0.08 * (k + 1) + 0.04 * np.arange(ms.size) / max(1, ms.size)
            ax.scatter(4 + jitter, ms, s=18, marker="x", label=label, zorder=3)
    ax.set_xlabel("d")
    ax.set_ylabel("output-gating neurons m")
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_capped_law(
    points_by_banks: Mapping[int, Sequence], fit: tuple[float, float]
) -> plt.Figure:
    """Relative error at step T against x = T (1 - lam_max), log-log: measured points (one
    marker per lam_max) per number of banks, the law e_p(x) (dashed), the fit window shaded."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    colours = {1: "C0", 2: "C3"}
    markers = {}
    for banks, points in points_by_banks.items():
        colour = colours.get(banks, "C2")
        for p in points:
            mk = markers.setdefault(p.lam_max, "os^vD"[len(markers) % 5])
            ax.scatter(p.x, p.error, marker=mk, color=colour, s=22, zorder=3)
        xs = np.geomspace(min(p.x for p in points), max(p.x for p in points), 200)
        label = f"{banks} bank{'s' if banks > 1 else ''}: law $e_{banks}(x)$"
        ax.plot(xs, law(xs, banks), "--", color=colour, lw=1, label=label)
    for lam_max, mk in markers.items():
        ax.scatter([], [], marker=mk, color="grey", label=f"lam_max = {lam_max:g}")
    ax.axvspan(*fit, color="grey", alpha=0.12, label="fit window")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("T (1 - lam_max)")
    ax.set_ylabel("relative error at step T")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def plot_capped_training(
    rows: Sequence,
    constructions: Mapping[str, Mapping[tuple[int, float], Sequence[float]]],
) -> plt.Figure:
    """Left: normalised held-out loss of every capped student (points) and of the capped
    constructions on the same teachers (short lines) per (T, lam_max). Right: the sorted lam of
    the pruned students of the largest T, one line per (cap, seed).

    ``rows``: ``readings.beyond.CappedStudent``s; ``constructions``: label ->
    {(T, lam_max): the construction's loss per seed} (``capped_construction_loss``).
    """
    keys = sorted({(r.T, r.lam_max) for r in rows}, key=lambda k: (k[0], -k[1]))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4.0))
    for i, key in enumerate(keys):
        losses = [r.normalised_loss for r in rows if (r.T, r.lam_max) == key]
        ax.scatter([i] * len(losses), losses, color="C0", s=20, zorder=3)
    styles = iter([("k", "-"), ("grey", "--"), ("C2", ":")])
    for label, by_key in constructions.items():
        colour, ls = next(styles)
        for i, key in enumerate(keys):
            c = np.asarray(by_key.get(key, []), dtype=float)
            c = c[c > 1e-12]  # the uncapped construction is exact: nothing to draw
            if c.size:
                ax.hlines(c, i - 0.3, i + 0.3, color=colour, ls=ls, lw=1)
        ax.plot([], [], color=colour, ls=ls, lw=1, label=label)
    ax.scatter([], [], color="C0", s=20, label="trained student (one per seed)")
    ax.set_xticks(range(len(keys)), [f"T={T}\nlam<={c:g}" for T, c in keys], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("MSE / Var(teacher output)")
    ax.grid(alpha=0.3, axis="y", which="both")
    ax.legend(fontsize=7, loc="lower left")
    T_max = max(k[0] for k in keys)
    for r in rows:
        if r.T == T_max and r.lams:
            colour = {1.0: "C0", 0.99: "C1", 0.9: "C3"}.get(r.lam_max, "C2")
            bx.plot(np.arange(1, len(r.lams) + 1), r.lams, color=colour, lw=1, alpha=0.8)
    for c, colour in ((1.0, "C0"), (0.99, "C1"), (0.9, "C3")):
        bx.plot([], [], color=colour, label=f"lam <= {c:g}")
    bx.set_xlabel(f"hidden neuron, by lam (pruned students, T = {T_max})")
    bx.set_ylabel("lam")
    bx.grid(alpha=0.3)
    bx.legend(fontsize=7)
    fig.tight_layout()
    return fig
