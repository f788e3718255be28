"""What the associative recall chapter shows (App. D.3, Fig. 7): every trained network analysed,
tables per size, accuracy and loss against size, the key-value blocks in the layout of Fig. 7,
the squared-difference fit, and the scorecard numbers.

Glossary (code name -> meaning):
    analyse_members   ``analysis.recall_algorithms.analyse_recall`` of every member of one gating
    size_rows         seed means per size: accuracy, loss, kept neurons, Score KV, R^2_SD, ...
    scorecard_values  the App. D.3 numbers of the scorecard, with notes (CE_ROWS: those read
                      on the networks trained with the paper's cross-entropy)
    prune_budget_values  the appD3.pruned.* rows, on the run at a decay budget that prunes
    recorded_reading  size_rows and the scorecard values of a recorded run, computed once
    ship_readings     those of the chapter's recorded runs, shipped beside the runs
"""

from __future__ import annotations

import dataclasses
import statistics

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..analysis.boundary import network
from ..analysis.recall_algorithms import RecallAnalysis, analyse_recall, squared_difference_fit
from ..analysis.thresholds import PRUNE_TOL
from ..constructions.recall_networks import compressed_neurons, naive_neurons
from ..experiments.associative_recall import associative_recall_config
from ..experiments.derived import derived, derived_key, ship, shipped_path
from ..experiments.recorded_runs import recorded
from ..models.gated_rnn import gated_rnn_forward

__all__ = [
    "LABELS",
    "analyse_members",
    "size_rows",
    "format_rows",
    "plot_accuracy_loss",
    "plot_blocks",
    "plot_sd_fit",
    "scorecard_values",
    "CE_ROWS",
    "prune_budget_values",
    "example_sequence",
    "READING_PROFILE",
    "recorded_reading",
    "RECORDED_READINGS",
    "ship_readings",
]

LABELS = {
    "io": "input-output gating",
    "side": "side gating",
    "io-ce": "input-output, cross-entropy",
}
_STYLE = {"io": ("C0", "o"), "side": ("C3", "s"), "io-ce": ("C2", "^")}


def analyse_members(config, tensors, gating, batch, *, prune_tol=PRUNE_TOL) -> list[RecallAnalysis]:
    """``analyse_recall`` of every member of one gating (squared-difference fit for all)."""
    return [
        analyse_recall(network(rnn), config.task, batch, prune_tol=prune_tol, sd_fit=True)
        for rnn in config.networks(tensors, gating)
    ]


def _mean(values) -> float:
    values = [v for v in values if v == v]  # nan-free
    return float(np.mean(values)) if values else float("nan")


def size_rows(config, tensors, gating, analyses) -> list[dict]:
    """Seed means per size of what each network reached and how it is built."""
    t, rows = tensors[gating], []
    members = config.members(gating)
    for n in sorted({n for _, n in members}):
        idx = [e for e, (_, k) in enumerate(members) if k == n]
        a = [analyses[e] for e in idx]
        rows.append(
            {
                "n": n,
                "accuracy": float(t["eval_accuracy"][idx].mean()),
                "loss": float(t["eval_loss"][idx].mean()),
                "kept": _mean([x.pruned.net.n for x in a]),
                "kv": _mean([len(x.values.kv) for x in a]),
                "score_kv": _mean([x.score_kv for x in a]),
                "r2_sd": _mean([x.sd_fit.r2 for x in a]),
                "key_rank1": _mean([x.values.key_rank1 for x in a]),
                "neg_peak": _mean([_mean(x.blocks.negative_peak[x.values.kv].tolist()) for x in a]),
            }
        )
    return rows


def format_rows(rows: list[dict], loss_name: str = "MSE") -> str:
    """The rows of ``size_rows`` as a fixed-width table (lines under 90 characters)."""
    head = (
        f"{'n':>3} {'accuracy':>8} {loss_name:>8} {'kept':>5} {'kv':>5} {'Score KV':>9} "
        f"{'R2_SD':>6} {'key r1':>6} {'neg peak':>8}"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['n']:>3} {r['accuracy']:>8.3f} {r['loss']:>8.2g} {r['kept']:>5.1f} "
            f"{r['kv']:>5.1f} {r['score_kv']:>9.3f} {r['r2_sd']:>6.3f} {r['key_rank1']:>6.2f} "
            f"{r['neg_peak']:>8.2f}"
        )
    return "\n".join(lines)


def plot_accuracy_loss(config, tensors) -> plt.Figure:
    """Held-out accuracy and loss against n for each gating: every seed (dots), seed mean (line).
    The loss panel shows the MSE-trained gatings only (the ablation's loss is a cross-entropy).
    One legend for both panels, below them, so that it covers no data."""
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


#: the compression rows' premise: pruning removes something at the budget, the median neurons
#: kept below this share of the trained size (else they measure that nothing was pruned)
PRUNES_BELOW = 0.9


#: the rows scored on the networks trained with the paper's cross-entropy (gating "io-ce", its
#: steps ``config.ce_train.steps``), not on the MSE-trained ones
CE_ROWS = ("appD3.io_is_not_attention",)


def _not_attention(analyses, members) -> tuple[float, float, float]:
    """(min(Score KV - 0.3, R^2_SD - 0.9), Score KV, R^2_SD): seed means over ``members``."""
    kv = statistics.mean(analyses[e].score_kv for e in members)
    r2 = statistics.mean(analyses[e].sd_fit.r2 for e in members)
    return min(kv - 0.3, r2 - 0.9), kv, r2


def _io_rows(config, analyses) -> dict[str, tuple[float, str]]:
    """The input-output rows: ``appD3.io_is_not_attention`` on the networks trained with the
    paper's cross-entropy ("io-ce", at its largest size), and the same measure of the
    MSE-trained ones beside it (``appD3.io_is_not_attention_mse``, ours). Without "io-ce" in
    the run, the first is NaN with the note "premise fails": it was not trained as the paper
    trains."""
    top = max(config.sizes)
    mse, kv, r2 = _not_attention(analyses["io"], config.largest("io"))
    rows = {}
    if "io-ce" in config.gatings:
        ce_top, steps = max(config.ce_sizes), config.ce_train.steps
        ce, kv_ce, r2_ce = _not_attention(analyses["io-ce"], config.largest("io-ce"))
        rows["appD3.io_is_not_attention"] = (
            ce,
            f"trained with the paper's cross-entropy (io-ce), n = m = {ce_top}, {steps:,} "
            f"steps: Score KV {kv_ce:.3f}, R2_SD {r2_ce:.3f}; MSE-trained: see the next row",
        )
    else:
        rows["appD3.io_is_not_attention"] = (
            float("nan"),
            "premise fails: no network of this run is trained with the paper's cross-entropy "
            f"(gating io-ce); the MSE-trained ones at n = m = {top} give {mse:.3f}",
        )
    rows["appD3.io_is_not_attention_mse"] = (
        mse,
        f"ours: trained with the MSE, n = m = {top}: Score KV {kv:.3f}, R2_SD {r2:.3f}",
    )
    return rows


def scorecard_values(config, tensors, analyses) -> dict[str, tuple[float, str]]:
    """id -> (ours, note) of the App. D.3 rows, at the largest size (see paper_values.json);
    the input-output rows as ``_io_rows`` makes them (CE_ROWS: on the cross-entropy networks).
    The compression rows are NaN with a "premise fails" note where pruning kept at least
    PRUNES_BELOW of the neurons: the claim is then undecided at that budget."""
    io, side = config.largest("io"), config.largest("side")
    kv_side = statistics.mean(analyses["side"][e].score_kv for e in side)
    kept = [analyses["side"][e].pruned.net.n for e in side]
    top = max(config.sizes)
    median_kept = float(statistics.median(kept))
    premise = ""
    if median_kept >= PRUNES_BELOW * top:
        premise = (
            f"premise fails: pruning kept {median_kept:g} of {top} neurons (median), so the "
            "count measures that this budget prunes nothing, not compression; "
        )
        median_kept = float("nan")
    return {
        "appD3.io_accuracy": (
            float(tensors["io"]["eval_accuracy"][io].mean()),
            f"n = m = {top}, MSE",
        ),
        "appD3.side_accuracy": (float(tensors["side"]["eval_accuracy"][side].mean()), f"n = {top}"),
        **_io_rows(config, analyses),
        "appD3.side_is_attention": (kv_side, f"n = {top}"),
        "appD3.side_neurons": (
            median_kept,
            f"{premise}kept per seed {kept} of {top}; naive "
            f"{naive_neurons(config.task.n_keys, config.task.n_values)}",
        ),
        # the same median against the stricter bound (paper_values.json)
        "appD3.side_neurons_compressed": (median_kept, f"{premise}kept per seed {kept}"),
    }


def prune_budget_values(config, tensors, analyses) -> dict[str, tuple[float, str]]:
    """id -> (ours, note) of the appD3.pruned.* rows: side gating at the largest size of a run
    at a decay budget that prunes (``experiments.associative_recall.prune_budget_config``). The
    count is NaN with a "premise fails" note where the networks no longer recall (mean
    accuracy below 0.95) or pruning kept at least PRUNES_BELOW of the neurons."""
    side = config.largest("side")
    top = max(config.sizes)
    accuracy = float(tensors["side"]["eval_accuracy"][side].mean())
    kept = [analyses["side"][e].pruned.net.n for e in side]
    median_kept = float(statistics.median(kept))
    premise = ""
    if accuracy < 0.95:
        premise = f"premise fails: held-out accuracy {accuracy:.3f} < 0.95; "
    elif median_kept >= PRUNES_BELOW * top:
        premise = f"premise fails: pruning kept {median_kept:g} of {top} neurons (median); "
    return {
        "appD3.pruned.side_accuracy": (accuracy, f"n = {top}"),
        "appD3.pruned.side_neurons": (
            float("nan") if premise else median_kept,
            f"{premise}kept per seed {kept} of {top}",
        ),
        "appD3.pruned.side_is_attention": (
            statistics.mean(analyses["side"][e].score_kv for e in side),
            f"n = {top}, pruned",
        ),
    }


def example_sequence(batch, index: int = 0) -> str:
    """One sequence as text: the pairs, the query and the answer (keys k1.., values v1..)."""
    keys, vals = batch.keys[index].tolist(), batch.values[index].tolist()
    pairs = "  ".join(f"(k{k + 1}, v{v + 1})" for k, v in zip(keys, vals, strict=True))
    q, a = int(batch.query_key[index]), int(batch.answer[index])
    return f"pairs: {pairs}\nquery: k{q + 1}  ->  answer: v{a + 1}"


#: the profile whose held-out batch a recorded run is read on, whatever the build's profile (its
#: 4,096 sequences): the reading is then one computation, done once (``recorded_reading``)
READING_PROFILE = "quick"

_VALUES = {"scorecard": scorecard_values, "prune": prune_budget_values}


def recorded_reading(name: str, values: str = "scorecard") -> dict:
    """The recorded App. D.3 run ``name`` read on the held-out batch of READING_PROFILE:
    ``{"rows": {gating: size_rows}, "values": id -> [ours, note]}``, the values those of
    ``scorecard_values`` (``values="scorecard"``) or ``prune_budget_values`` ("prune").

    Computed once (``experiments.derived``: shipped beside the run or cached), since it depends
    on the run, the batch and this code only: about two minutes of squared-difference fits on
    a 2-core CPU for the 145 networks of associative-recall-cpu.
    """
    reading, label, args = _reading_key(values)

    def compute() -> dict:
        run = recorded(name)
        rc, tensors, batch = run.config, run.tensors, reading.evaluation_batch()
        analyses = {g: analyse_members(rc, tensors, g, batch) for g in rc.gatings}
        rows = {g: size_rows(rc, tensors, g, analyses[g]) for g in rc.gatings}
        return {"rows": rows, "values": _VALUES[values](rc, tensors, analyses)}

    return derived(name, label, args, compute, [__name__])


def _reading_key(values: str):
    """(the READING_PROFILE config, the derived label, its args) of a reading."""
    if values not in _VALUES:
        raise ValueError(f"values must be one of {sorted(_VALUES)}, got {values!r}")
    reading = associative_recall_config(READING_PROFILE)
    args = {"eval_batch": reading.eval_batch, "task": dataclasses.asdict(reading.task)}
    return reading, f"recall-{values}", args


#: the readings the associative recall chapter makes of recorded runs: (run, values)
RECORDED_READINGS = (
    ("associative-recall-cpu", "scorecard"),
    ("associative-recall-prune-paper", "prune"),
)


def ship_readings() -> list[tuple]:
    """Compute (or load) every reading of RECORDED_READINGS and ship it beside its run
    (``experiments.derived.ship``); a reading already shipped under today's key is left as it
    is. Returns (file, shipped now) per reading."""
    out = []
    for name, values in RECORDED_READINGS:
        _, label, args = _reading_key(values)
        path = shipped_path(name, label, derived_key(name, label, args, [__name__]))
        if path.exists():
            out.append((path, False))
            continue
        recorded_reading(name, values)
        out.append((ship(name, label, args, [__name__]), True))
    return out
