"""App. D.3's scorecard values (associative recall, Fig. 7), id -> (ours, note), and the readings
of the chapter's recorded runs, computed once (``readings.derived``)."""

from __future__ import annotations

import dataclasses
import statistics

from ..constructions.recall_networks import naive_neurons
from ..experiments.associative_recall import associative_recall_config
from ..experiments.recorded_runs import recorded
from .derived import derived
from .recall import analyse_members, size_rows

#: the compression rows' premise: the median neurons kept are below this share of the trained size
PRUNES_BELOW = 0.9


#: the rows scored on the networks trained with the paper's cross-entropy (gating "io-ce")
CE_ROWS = ("appD3.io_is_not_attention",)


def row_steps(config, ids) -> dict[str, int]:
    """id -> the training steps of the networks each row reads (CE_ROWS: ``config.ce_train``'s)."""
    return {i: (config.ce_train if i in CE_ROWS else config.train).steps for i in ids}


def _not_attention(analyses, members) -> tuple[float, float, float]:
    """(min(Score KV - 0.3, R^2_SD - 0.9), Score KV, R^2_SD): seed means over ``members``."""
    kv = statistics.mean(analyses[e].score_kv for e in members)
    r2 = statistics.mean(analyses[e].sd_fit.r2 for e in members)
    return min(kv - 0.3, r2 - 0.9), kv, r2


def _io_rows(config, analyses) -> dict[str, tuple[float, str]]:
    """``appD3.io_is_not_attention`` on the "io-ce" networks (NaN, "premise fails", without them)
    and ``..._mse`` on the MSE-trained ones (ours)."""
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


def _side(config, analyses) -> tuple[list, int, list[int], float, float]:
    """(largest side members, that size, neurons each kept, their median, mean Score KV)."""
    side, top = config.largest("side"), max(config.sizes)
    kept = [analyses["side"][e].pruned.net.n for e in side]
    kv = statistics.mean(analyses["side"][e].score_kv for e in side)
    return side, top, kept, float(statistics.median(kept)), kv


def scorecard_values(config, tensors, analyses) -> dict[str, tuple[float, str]]:
    """id -> (ours, note) of the App. D.3 rows at the largest size; the compression rows are NaN,
    "premise fails", where pruning kept at least PRUNES_BELOW of the neurons."""
    io = config.largest("io")
    side, top, kept, median_kept, kv_side = _side(config, analyses)
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
    """id -> (ours, note) of the appD3.pruned.* rows (a ``prune_budget_config`` run); the count is
    NaN, "premise fails", below 0.95 accuracy or where pruning kept PRUNES_BELOW or more."""
    side, top, kept, median_kept, kv_side = _side(config, analyses)
    accuracy = float(tensors["side"]["eval_accuracy"][side].mean())
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
        "appD3.pruned.side_is_attention": (kv_side, f"n = {top}, pruned"),
    }


#: the profile whose held-out batch every recorded run is read on, whatever the build's profile
READING_PROFILE = "quick"

_VALUES = {"scorecard": scorecard_values, "prune": prune_budget_values}


def recorded_reading(name: str, values: str = "scorecard") -> dict:
    """The recorded run ``name`` read on READING_PROFILE's batch, computed once (``derived``):
    ``{"rows": {gating: size_rows}, "values": id -> [ours, note]}`` of ``_VALUES[values]``."""
    reading, label, args = reading_key(values)

    def compute() -> dict:
        run = recorded(name)
        rc, tensors, batch = run.config, run.tensors, reading.evaluation_batch()
        analyses = {g: analyse_members(rc, tensors, g, batch) for g in rc.gatings}
        rows = {g: size_rows(rc, tensors, g, analyses[g]) for g in rc.gatings}
        return {"rows": rows, "values": _VALUES[values](rc, tensors, analyses)}

    return derived(name, label, args, compute, [__name__])


def reading_key(values: str):
    """(the READING_PROFILE config, the derived label, its args). ValueError: unknown values."""
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
