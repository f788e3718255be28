"""The figure of Fig. 3A-C's loss edge: every seed's excess loss against the student's size."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np

from ..analysis.loss_edge import CENTRAL_LEVEL, FLOOR, LEVELS, median_excess


def plot_edges(sweeps: Sequence, titles: Sequence[str], ncols: int = 3) -> plt.Figure:
    """Every seed's excess loss against n = m (thin lines), their median (points and line), the
    levels of the edge (the central one solid), the construction's count and twice it."""
    ncols = min(ncols, len(sweeps))
    nrows = -(-len(sweeps) // ncols)
    fig, grid = plt.subplots(
        nrows, ncols, figsize=(7.5, 0.8 + 2.9 * nrows), layout="constrained", squeeze=False
    )
    for ax in grid.ravel()[len(sweeps) :]:
        ax.set_visible(False)
    for ax, s, title in zip(grid.ravel(), sweeps, titles, strict=False):
        E = np.maximum(s.excess, FLOOR)
        for r in range(s.seeds):
            ax.plot(s.sizes, E[:, r], color="0.65", lw=0.8, label="each seed" if r == 0 else None)
        ax.plot(s.sizes, median_excess(s.excess), "o-", color="C0", label="median over seeds")
        for L in LEVELS:
            central = L == CENTRAL_LEVEL
            ax.axhline(
                L,
                color="C3",
                lw=1.2 if central else 0.7,
                ls="-" if central else ":",
                label="central level" if central else ("other levels" if L == LEVELS[0] else None),
            )
        k = s.construction
        ax.axvline(k, color="k", ls=":", lw=1, label="construction's count")
        ax.axvline(2 * k, color="k", ls="--", lw=1, label="twice it (the paper's edge)")
        ax.set_yscale("log")
        ax.set_xlabel("n = m")
        ax.set_title(title, fontsize=9)
    for ax in grid[:, 0]:
        ax.set_ylabel("excess loss")
    handles, labels = grid.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8)
    return fig
