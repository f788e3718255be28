"""Figures of the gated RNN's weights (Fig. 1, Fig. 2B) and of the construction's cost.

Glossary (code name -> paper symbol -> section):
    W_in1, W_in2    input gating matrices W_in1, W_in2 (n, d+1); last column reads the 1   Eq. 2
    lam             the diagonal recurrence lambda (n)                                      Eq. 2
    W_out1, W_out2  output gating matrices W_out1, W_out2 (m, n)                            Eq. 2
    D               readout D (d_out, m); drawn transposed, so its rows line up with m      Eq. 2
    W_side          side gate W_side (n, d+1) (side gating only)                        App. A.2
    groups          contiguous blocks of neurons, ``[(label, start, stop), ...]``, e.g. the
                    key-value neurons (lam = 1) and the query neurons (lam = 0) of Fig. 1

``plot_construction`` takes a constructed ``GatedRNN`` (Fig. 1) or a trained, pruned and
reordered ``analysis.Network`` (Fig. 2B).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..analysis.boundary import Network
from ..constructions.gated_rnn import VARIANTS, attention_parameter_count
from ..models.gated_rnn import GatedRNN, decay_matrix
from ..readings.construction import variant_counts

Groups = Sequence[tuple[str, int, int]]


def lam_blocks(lam: torch.Tensor) -> list[tuple[str, int, int]]:
    """Contiguous runs of neurons with lam within 1e-6 of 1 ("key-value"), of 0 ("query") or in
    between: ``[(label, start, stop), ...]`` covering 0 .. len(lam), in order."""
    lam = torch.as_tensor(lam).detach().to(torch.float64).reshape(-1)

    def kind(v: float) -> str:
        if abs(v - 1.0) <= 1e-6:
            return "key-value (λ=1)"
        if abs(v) <= 1e-6:
            return "query (λ=0)"
        return "0<λ<1"

    kinds = [kind(v) for v in lam.tolist()]
    groups, start = [], 0
    for i in range(1, len(kinds) + 1):
        if i == len(kinds) or kinds[i] != kinds[start]:
            groups.append((kinds[start], start, i))
            start = i
    return groups


def _check_groups(groups: Groups | None, size: int, name: str) -> list:
    if groups is None:
        return []
    out = []
    for g in groups:
        if len(g) != 3 or not 0 <= g[1] < g[2] <= size:
            raise ValueError(
                f"{name} must be (label, start, stop) with 0 <= start < stop <= {size}, got {g!r}"
            )
        out.append(tuple(g))
    return out


def _heatmap(ax, W: np.ndarray, title: str, cmap: str = "RdBu_r", vmin=None, vmax=None):
    if vmax is None:
        vmax = float(np.abs(W).max()) or 1.0
        vmin = -vmax
    im = ax.imshow(W, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest", aspect="auto")
    ax.set_title(title, fontsize=10)
    ax.tick_params(labelsize=9)
    return im


def _column_labels(ax, labels: Sequence[str], upright_above: int = 5) -> None:
    """Label a heat map's columns; more than ``upright_above`` labels stand upright."""
    rotation = 90 if len(labels) > upright_above else 0
    ax.set_xticks(range(len(labels)), labels, fontsize=9, rotation=rotation)


def _mark(ax, groups: list, axis: str, labels: bool = False) -> None:
    """Draw group boundaries as lines along ``axis`` ("rows" or "cols"); optionally label them."""
    line = ax.axhline if axis == "rows" else ax.axvline
    for _, start, _ in groups[1:]:  # boundaries between groups, not the panel's edges
        line(start - 0.5, color="k", lw=1.2)
    if labels and groups:
        ticks = [(start + stop - 1) / 2 for _, start, stop in groups]
        names = [label for label, _, _ in groups]
        if axis == "rows":
            ax.set_yticks(ticks, names, fontsize=9)
        else:
            ax.set_xticks(ticks, names, fontsize=9, rotation=30, ha="right")


def plot_construction(
    rnn: GatedRNN | Network,
    *,
    hidden_groups: Groups | None | str = "lam",
    output_groups: Groups | None = None,
    title: str | None = None,
) -> plt.Figure:
    """Draw W_in1, W_in2, lam, W_out1, W_out2 and D (or W_side, D) as heat maps (Fig. 1).

    Args:
        rnn: a ``GatedRNN`` (constructed) or an ``analysis.Network`` (trained and pruned).
        hidden_groups: blocks of hidden neurons, ``[(label, start, stop), ...]``, marked by lines
            and labelled; "lam" (default) finds them from lam (``lam_blocks``); None: no marks.
        output_groups: blocks of output-gating neurons, marked the same way.
    Top row: hidden neurons (rows) against x~ = [x; 1] (columns), and lam (side gating: also
    W_side and D^T). Bottom row (output gating): output-gating neurons (rows) against the hidden
    neurons, and D^T. Each panel has its own symmetric colour scale (lam: 0 to 1).
    """
    if isinstance(rnn, Network):
        rnn = rnn.rnn()
    if not isinstance(rnn, GatedRNN):
        raise TypeError(f"rnn must be a GatedRNN or an analysis.Network, got {type(rnn).__name__}")
    W = {k: v.detach().to(torch.float64).cpu().numpy() for k, v in rnn.params().items()}
    lam = rnn.lam.detach().to(torch.float64).cpu().numpy()
    if isinstance(hidden_groups, str):
        if hidden_groups != "lam":
            raise ValueError(
                f"hidden_groups must be a list of groups, None or 'lam', got {hidden_groups!r}"
            )
        hidden_groups = lam_blocks(rnn.lam)
    hidden = _check_groups(hidden_groups, rnn.n, "hidden_groups")
    top = ["W_in1", "W_in2", "lam"] + (["W_side", "D^T"] if rnn.side else [])
    output = _check_groups(output_groups, 0 if rnn.side else rnn.m, "output_groups")
    if rnn.side and output:
        raise ValueError("output_groups needs output gating; this network has side gating")
    x_labels = [f"x{i + 1}" for i in range(rnn.d)] + ["1"]
    y_labels = [f"y{i + 1}" for i in range(rnn.d_out)]
    fig = plt.figure(figsize=(7.5, 3.4 if rnn.side else 6.4), layout="constrained")
    subs = [fig] if rnn.side else fig.subfigures(2, 1)
    _hidden_row(subs[0], rnn, W, lam, top, hidden, x_labels, y_labels)
    if not rnn.side:
        _output_row(subs[1], rnn, W, hidden, output, y_labels)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def _hidden_row(sub, rnn: GatedRNN, W: dict, lam, top, hidden, x_labels, y_labels) -> None:
    """``plot_construction``'s top row: the panels ``top``, their blocks ``hidden`` marked."""
    d = rnn.d
    widths = {"W_in1": d + 1, "W_in2": d + 1, "lam": 1, "W_side": d + 1, "D^T": rnn.d_out}
    axes = sub.subplots(1, len(top), width_ratios=[max(widths[k], 1.5) for k in top])
    for ax, key in zip(axes, top, strict=True):
        if key == "lam":
            im = _heatmap(ax, lam[:, None], "λ", cmap="viridis", vmin=0.0, vmax=1.0)
            ax.set_xticks([])
        elif key == "D^T":
            im = _heatmap(ax, W["D"].T, key)
            _column_labels(ax, y_labels, upright_above=2)
        else:
            im = _heatmap(ax, W[key], key)
            _column_labels(ax, x_labels, upright_above=2 if rnn.side else 5)
        _mark(ax, hidden, "rows", labels=key == "W_in1")
        sub.colorbar(im, ax=ax, shrink=0.6)
    axes[0].set_ylabel("hidden neuron", fontsize=9)


def _output_row(sub, rnn: GatedRNN, W: dict, hidden, output, y_labels) -> None:
    """``plot_construction``'s bottom row (output gating): W_out1, W_out2 and D^T."""
    n = rnn.n
    axes = sub.subplots(1, 3, width_ratios=[n, n, max(rnn.d_out, 2)])
    for ax, key in zip(axes, ["W_out1", "W_out2", "D^T"], strict=True):
        im = _heatmap(ax, W["D"].T if key == "D^T" else W[key], key)
        if key == "D^T":
            _column_labels(ax, y_labels, upright_above=2)
        else:
            _mark(ax, hidden, "cols", labels=True)
        _mark(ax, output, "rows", labels=key == "W_out1")
        sub.colorbar(im, ax=ax, shrink=0.6)
    axes[0].set_ylabel("output-gating neuron", fontsize=9)


def construction_counts(ds: Iterable[int]) -> list[dict]:
    """Neurons and parameters of every variant for each d, beside attention's 3 d^2; the
    "low_rank" rows at r_V = r_KQ = max(1, d // 2). Returns one dict per d: {"d",
    "attention_params", "<variant>_n", "<variant>_m", "<variant>_params", ...}.
    """
    rows = []
    for d in ds:
        row = {"d": d, "attention_params": attention_parameter_count(d)}
        for v in VARIANTS:
            c = variant_counts(v, d, max(1, d // 2) if v == "low_rank" else None)
            row |= {f"{v}_n": c.n, f"{v}_m": c.m, f"{v}_params": c.params}
        rows.append(row)
    return rows


def plot_counts(ds: Iterable[int] = range(1, 13)) -> plt.Figure:
    """Hidden neurons n and parameters against d for each variant, beside attention (3 d^2)."""
    rows = construction_counts(ds)
    d = [r["d"] for r in rows]
    fig, (ax_n, ax_p) = plt.subplots(1, 2, figsize=(7.5, 3.6), layout="constrained")
    labels = {"low_rank": "low rank (r = ⌊d/2⌋)", "side": "side gating"}
    for v in VARIANTS:
        ax_n.plot(d, [r[f"{v}_n"] for r in rows], "o-", ms=3, label=labels.get(v, v))
        ax_p.plot(d, [r[f"{v}_params"] for r in rows], "o-", ms=3, label=labels.get(v, v))
    ax_p.plot(d, [r["attention_params"] for r in rows], "k--", label="attention (3d²)")
    ax_n.set(xlabel="d", ylabel="hidden neurons n", title="neurons")
    ax_p.set(xlabel="d", ylabel="parameters", title="parameters", yscale="log")
    # one legend for both panels, below them: inside, it would cover the curves
    fig.legend(*ax_p.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=9)
    return fig


def plot_error_vs_eps(
    curves: dict[str, tuple[Sequence[float], Sequence[float]]],
    *,
    exact: dict[str, float] | None = None,
    title: str | None = None,
) -> plt.Figure:
    """Relative error against the gate scale eps on log-log axes (App. B constructions).

    Args:
        curves: label -> (eps values, relative errors), one line per linearised construction.
        exact: label -> the error of a construction that does not depend on eps (Mamba), a
            horizontal dotted line with its value written on it.
    The dashed guide line grows as eps^2 (the constructions' Taylor order), a factor 3 below the
    lowest curve at the largest eps.
    """
    if not curves:
        raise ValueError("curves must hold at least one (eps, errors) pair")
    fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
    markers = "osD^v<>p"
    for i, (label, (eps, err)) in enumerate(curves.items()):
        # shrinking open markers: coinciding curves stay visible one inside the other
        ms = max(9 - 1.5 * i, 4)
        ax.loglog(eps, err, f"{markers[i % len(markers)]}-", ms=ms, mfc="none", label=label)
    eps_all = np.unique(np.concatenate([np.asarray(e, dtype=float) for e, _ in curves.values()]))
    top = float(eps_all[-1])
    at_top = [float(r[list(e).index(top)]) for e, r in curves.values() if top in list(e)]
    guide = min(at_top) / 3 * (eps_all / top) ** 2.0
    ax.loglog(eps_all, guide, "k--", lw=1, label=r"guide $\propto \varepsilon^{2}$")
    for label, value in (exact or {}).items():
        ax.axhline(value, color="0.3", ls=":", lw=1.5)
        ax.annotate(
            f"{label}: {value:.1e}",
            (eps_all[0], value),
            xytext=(0, 4),
            textcoords="offset points",
            fontsize=9,
            color="0.3",
        )
    ax.set(
        xlabel=r"$\varepsilon$ (input scale of the linearised sigmoids)", ylabel="relative error"
    )
    ax.legend(fontsize=9, loc="center right")
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def plot_decay_matrices(lam: torch.Tensor, T: int) -> plt.Figure:
    """The decay matrix L_ts = lam^(t-s) (s <= t, else 0) of Eq. (rnn-unrolled) of each
    neuron of ``lam`` (n,) over T steps: one T x T heat map per neuron, colour from 0 to 1,
    titled with its lam."""
    L = decay_matrix(lam, T).detach().cpu().numpy()  # (T, T, n)
    fig, axes = plt.subplots(1, len(lam), figsize=(2.5 * len(lam), 2.8), layout="constrained")
    for i, ax in enumerate(np.atleast_1d(axes)):
        ax.imshow(L[:, :, i], cmap="viridis", vmin=0, vmax=1)
        ax.set(
            title=f"L for λ = {lam[i].item():g}",
            xlabel="s (input step)",
            ylabel="t (state step)",
        )
    return fig
