"""Figures of the in-context regression chapters ("One step of gradient descent", "RNNs learn
gradient descent"): the GD network's weights, training curves, the polynomial's coefficients, the
memory of the trained networks.

Glossary (code name -> paper symbol -> section):
    eta_star     eta* = 5/74, the optimal GD step size                     Sec. 5.1 / App. D.2
    gd_loss      7/74, the loss of one optimal GD step                     Sec. 5.2
    coefs        coefficients of x_t[i] y_t[1] x_q[i], (seeds, t, i)      Table 2
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..analysis.polynomial import Polynomial
from ..models.gated_rnn import GatedRNN

#: the task's sizes: T = 12 observations of x (3 entries) and y (3 entries), then the query
STEPS, D_X, D_Z = 12, 3, 6


def plot_gd_rnn_weights(rnn: GatedRNN) -> plt.Figure:
    """W_in1, W_in2, W_out1, W_out2 and D of a gated RNN as five heat maps, no ticks, each with
    its own symmetric colour scale (blue negative, red positive)."""
    fig, axes = plt.subplots(
        1, 5, figsize=(7.5, 2.4), gridspec_kw={"width_ratios": [7, 7, 12, 12, 9]}
    )
    mats = {
        "$W_{in1}$": rnn.W_in1,
        "$W_{in2}$": rnn.W_in2,
        "$W_{out1}$": rnn.W_out1,
        "$W_{out2}$": rnn.W_out2,
        "$D$": rnn.D,
    }
    for ax, (name, w) in zip(axes, mats.items(), strict=True):
        w = w.detach().cpu().numpy()
        lim = float(np.abs(w).max())
        ax.imshow(w, cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.set_title(name)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig


def plot_training_losses(
    steps: np.ndarray,
    losses: np.ndarray,
    labels: Sequence[str],
    gd_loss: float,
) -> plt.Figure:
    """Training loss curves (one per column of ``losses``, log scale) and the GD loss (dashed)."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for column, label in zip(np.asarray(losses).T, labels, strict=True):
        ax.plot(steps, column, lw=1, label=label)
    ax.axhline(gd_loss, color="k", ls="--", lw=1, label="one GD step, 7/74")
    ax.set_yscale("log")
    ax.set_ylim(0.08, 1.0)
    ax.set_xlabel("training step")
    ax.set_ylabel("training loss")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def gd_monomials(poly: Polynomial) -> np.ndarray:
    """A boolean mask over ``poly``'s monomials: True for the 36 x_t[i] y_t[1] x_q[i] of one GD
    step's first output (t = 1..12, i = 1..3)."""
    mask = np.zeros(len(poly), dtype=bool)
    for t in range(STEPS):
        for i in range(D_X):
            row = sorted([t * D_Z + i, t * D_Z + D_X, STEPS * D_Z + i]) + [poly.one]
            mask |= (poly.monomials == np.array(row)).all(axis=1)
    return mask


def plot_coefficient_histogram(poly: Polynomial, eta_star: float) -> plt.Figure:
    """Histogram (log-log) of |coefficient| of the first output: the GD monomials against all
    others (zeros left out), and eta* (dashed)."""
    c = np.abs(poly.coeffs[:, 0])
    gd_rows = gd_monomials(poly)
    fig, ax = plt.subplots(figsize=(6, 3.3))
    bins = np.logspace(-12, 0, 61)
    ax.hist(c[~gd_rows & (c > 0)], bins=bins, label="all other monomials", color="gray")
    ax.hist(
        c[gd_rows], bins=bins, label=f"$x_t[i]\\, y_t[1]\\, x_q[i]$ ({gd_rows.sum()})", color="C3"
    )
    ax.axvline(eta_star, color="k", ls="--", lw=1, label="$\\eta^*$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("|coefficient| in the first output")
    ax.set_ylabel("monomials")
    ax.legend(fontsize=9)
    fig.tight_layout()
    return fig


def plot_memory(
    coefs: np.ndarray, seeds: Sequence[int], lam_used: np.ndarray, eta_star: float
) -> plt.Figure:
    """Left: the GD coefficient per observation step t (mean over i) over eta*, one line per
    seed, and 1 (dashed). Right: a histogram of lam of the used hidden neurons."""
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(7.5, 3.0))
    for j, seed in enumerate(seeds):
        ax0.plot(
            range(1, STEPS + 1),
            coefs[j].mean(axis=1) / eta_star,
            marker="o",
            ms=3,
            label=f"seed {seed}",
        )
    ax0.axhline(1.0, color="k", ls="--", lw=1)
    ax0.set_xlabel("observation step t")
    ax0.set_ylabel("coefficient / $\\eta^*$ (mean over i)")
    ax0.legend(fontsize=9, loc="best")
    ax1.hist(lam_used, bins=np.linspace(0, 1, 41), color="C0")
    ax1.set_xlabel("$\\lambda$ of the hidden neurons (all seeds)")
    ax1.set_ylabel("neurons")
    fig.tight_layout()
    return fig


def plot_gd_loss_eta(
    loss_at: Callable[[float], float],
    eta_star: float,
    etas: torch.Tensor,
    mc_mean: torch.Tensor,
    mc_se: torch.Tensor,
) -> plt.Figure:
    """The loss of one GD step against its learning rate: the exact curve ``loss_at(eta)`` on
    [0, 0.13], the Monte Carlo estimates at ``etas`` (all but the last, which is eta*) with
    error bars of three standard errors, and a dashed line at ``eta_star``."""
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    grid = torch.linspace(0.0, 0.13, 200, dtype=torch.float64)
    exact = [float(loss_at(e)) for e in grid.tolist()]
    ax.plot(grid.numpy(), exact, label="exact $\\mathcal{L}(\\eta)$")
    ax.errorbar(
        etas[:-1].numpy(),
        mc_mean[:-1].numpy(),
        yerr=3 * mc_se[:-1].numpy(),
        fmt="o",
        ms=3,
        label="Monte Carlo (3 SE)",
    )
    ax.axvline(float(eta_star), color="gray", ls="--", lw=1)
    ax.annotate(
        "$\\eta^* = 5/74$", (float(eta_star), 0.45), xytext=(4, 0), textcoords="offset points"
    )
    ax.set_xlabel("learning rate $\\eta$")
    ax.set_ylabel("loss")
    ax.set_ylim(0, 0.55)
    ax.legend()
    fig.tight_layout()
    return fig
