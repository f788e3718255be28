"""Readings of associative recall (App. D.3, Fig. 7): every trained network analysed, seed means
per size, what single networks hold (scorecard values: ``recall_scores``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from ..analysis.boundary import network
from ..analysis.recall_algorithms import RecallAnalysis, analyse_recall
from ..analysis.thresholds import PRUNE_TOL


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


def planted_rows(planted: Mapping, task, batch) -> list[dict]:
    """A row per hand-built network of ``planted`` (name -> ``GatedRNN``), unpruned, with the mean
    rank-1 share and negative peak of its key-value neurons' blocks."""
    rows = []
    for name, rnn in planted.items():
        a = analyse_recall(network(rnn), task, batch, prune_tol=1e-9, sd_fit=True)
        r1, neg = (float(v[a.values.kv].mean()) for v in (a.blocks.rank1, a.blocks.negative_peak))
        rows.append(
            {
                "network": name,
                "n": rnn.n,
                "accuracy": a.accuracy,
                "score_kv": a.score_kv,
                "r2_sd": a.sd_fit.r2,
                "rank1": r1,
                "neg_peak": neg,
            }
        )
    return rows


def side_seed_rows(config, analyses: Sequence) -> list[dict]:
    """A row per seed of the side-gated networks of the largest size (``analyses``: one per side
    member): lowest rank-1 share and mean negative peak of their key-value blocks."""
    rows = []
    for e, seed in zip(config.largest("side"), config.seeds, strict=False):
        a = analyses[e]
        kv = a.values.kv
        rows.append(
            {
                "seed": seed,
                "kept": a.pruned.net.n,
                "kv": len(kv),
                "rank1_min": float(a.blocks.rank1[kv].min()),
                "neg_peak": float(a.blocks.negative_peak[kv].mean()),
            }
        )
    return rows


def io_fit_rows(config, analyses: Sequence, eval_loss, n: int) -> list[dict]:
    """A row per seed of the MSE-trained input-output gated networks of size ``n`` (``analyses``,
    ``eval_loss``: one per ``config.members("io")``); the keys' fitted code to 2 digits."""
    rows = []
    for e, (seed, size) in enumerate(config.members("io")):
        if size == n:
            a = analyses[e]
            rows.append(
                {
                    "seed": seed,
                    "accuracy": a.accuracy,
                    "mse": float(eval_loss[e]),
                    "r2_sd": a.sd_fit.r2,
                    "code": np.round(a.sd_fit.code.numpy(), 2).tolist(),
                }
            )
    return rows


@dataclasses.dataclass(frozen=True)
class ValueNeurons:
    """What the pruned network of one ``RecallAnalysis`` holds (``value_neurons``)."""

    hidden: int  # kept hidden neurons
    output: int  # kept output-gating neurons
    memory: int  # neurons with lam >= 0.5
    current: int  # neurons with lam < 0.5
    value: list  # the value each memory neuron is most selective to
    selectivity: list[float]  # how selective (rounded to 2 digits)
    key_rank1: float  # the share of one key code in the memory
    code: list[float]  # that code (rounded)
    alignment: list[float]  # the current neurons' alignment with it (rounded)
    accuracy: float
    score_kv: float
    r2_sd: float


def value_neurons(a: RecallAnalysis) -> ValueNeurons:
    """The ``ValueNeurons`` of ``a``."""
    vn = a.values
    return ValueNeurons(
        hidden=a.pruned.net.n,
        output=a.pruned.net.m,
        memory=len(a.memory),
        current=len(a.current),
        value=vn.value,
        selectivity=np.round(vn.selectivity.numpy(), 2).tolist(),
        key_rank1=vn.key_rank1,
        code=np.round(vn.code.numpy(), 2).tolist(),
        alignment=np.round(vn.current_alignment.numpy(), 2).tolist(),
        accuracy=a.accuracy,
        score_kv=a.score_kv,
        r2_sd=a.sd_fit.r2,
    )
