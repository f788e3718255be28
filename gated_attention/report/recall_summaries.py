"""Printed summaries of the associative recall chapter (App. D.3): the setup of a profile, the
hand-built networks' measures, the tables per gating, one network's per-value neurons, and the
scorecard rows of a reading.

    print_setup         the task, the sizes, the seeds and the two training budgets
    print_planted       accuracy, Score KV, R^2_SD, rank 1 and negative peak of hand-built networks
    print_gating_rows   ``recall_tables.format_rows`` of each gating, under its label
    print_value_neurons what one network's memory and current neurons hold
    print_side_seeds    the side-gated networks of the largest size, seed by seed
    print_io_fits       the squared-difference fit of each input-output network of one size
    recall_records      one scorecard row per App. D.3 value, with its note

The numbers come from ``report.recall_tables`` and ``analysis.recall_algorithms``; this module
only prints them (and scores them, ``recall_records``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..analysis.boundary import network
from ..analysis.recall_algorithms import analyse_recall
from ..constructions.recall_networks import compressed_neurons, naive_neurons
from . import scorecard, verdict
from .recall_tables import CE_ROWS, LABELS, format_rows

__all__ = [
    "print_setup",
    "print_planted",
    "print_gating_rows",
    "print_value_neurons",
    "print_side_seeds",
    "print_io_fits",
    "recall_records",
]


def print_setup(profile: str, config) -> None:
    """Print the profile and the task of ``config`` (``experiments.associative_recall_config``):
    keys, values and steps; the sizes and seeds; the training of the squared-error networks
    and of the cross-entropy ablation."""
    task, tc, ce = config.task, config.train, config.ce_train
    print(
        f"profile: {profile}; N_k = {task.n_keys} keys, N_v = {task.n_values} values, "
        f"T = {task.T} steps"
    )
    print(f"sizes n: {config.sizes}; seeds: {config.seeds}")
    print(
        f"training: {tc.steps:,} steps of batch {tc.batch_size}, AdamW lr {tc.lr:g} (cosine), "
        f"weight decay {tc.weight_decay:g}"
    )
    print(f"cross-entropy ablation: sizes {config.ce_sizes}, {ce.steps:,} steps, same optimiser")


def print_planted(planted: Mapping, task, batch) -> None:
    """Analyse each hand-built network of ``planted`` (name -> ``GatedRNN``) on ``batch``
    (``analyse_recall``, no pruning, with the squared-difference fit) and print one row each:
    n, accuracy, Score KV, R^2_SD, and the mean rank-1 share and negative peak of its
    key-value neurons' blocks."""
    print(f"{'':<24}{'n':>3}{'accuracy':>9}{'Score KV':>9}{'R2_SD':>7}{'rank 1':>7}{'neg peak':>9}")
    for name, rnn in planted.items():
        a = analyse_recall(network(rnn), task, batch, prune_tol=1e-9, sd_fit=True)
        r1, neg = (float(v[a.values.kv].mean()) for v in (a.blocks.rank1, a.blocks.negative_peak))
        print(
            f"{name:<24}{rnn.n:>3}{a.accuracy:>9.2f}{a.score_kv:>9.2f}{a.sd_fit.r2:>7.2f}"
            f"{r1:>7.2f}{neg:>9.2f}"
        )


def print_gating_rows(rows: Mapping[str, Sequence[dict]], gatings: Sequence[str]) -> None:
    """For each gating of ``gatings``, its label and ``format_rows`` of ``rows[gating]`` (the
    loss column: CE for the cross-entropy ablation, else MSE), a blank line after each."""
    for g in gatings:
        print(f"{LABELS[g]}:")
        print(format_rows(rows[g], "CE" if g == "io-ce" else "MSE"), end="\n\n")


def print_value_neurons(a) -> None:
    """What the pruned network of one ``RecallAnalysis`` holds: its kept neurons, memory
    (lam >= 0.5) and current ones; the value each memory neuron is most selective to and how
    selective; the share of one key code in the memory and that code; the current neurons'
    alignment with it; accuracy, Score KV and R^2_SD."""
    vn = a.values
    print(
        f"kept {a.pruned.net.n} hidden, {a.pruned.net.m} output-gating neurons; "
        f"memory (λ ≥ 0.5): {len(a.memory)}, current (λ < 0.5): {len(a.current)}"
    )
    print("value each memory neuron is most selective to:", vn.value)
    print("selectivity:", np.round(vn.selectivity.numpy(), 2).tolist())
    print(
        f"one key code shared by the memory: {vn.key_rank1:.2f} of the energy; "
        f"code {np.round(vn.code.numpy(), 2).tolist()}"
    )
    print(
        "current neurons' alignment with that code:",
        np.round(vn.current_alignment.numpy(), 2).tolist(),
    )
    print(f"accuracy {a.accuracy:.3f}, Score KV {a.score_kv:.2f}, R2_SD {a.sd_fit.r2:.3f}")


def print_side_seeds(config, analyses: Sequence) -> None:
    """The side-gated networks of the largest size (``analyses``: the ``RecallAnalysis`` of
    every side-gating member): how many neurons naive attention and any exact network need,
    then per seed the kept and key-value neurons, the lowest rank-1 share and the mean
    negative peak of their key-value blocks."""
    K, V = config.task.n_keys, config.task.n_values
    naive, least = naive_neurons(K, V), compressed_neurons(K)
    print(f"of n = {max(config.sizes)}; naive attention needs {naive}, any exact network {least}")
    for e, seed in zip(config.largest("side"), config.seeds, strict=False):
        a = analyses[e]
        kv = a.values.kv
        print(
            f"seed {seed}: {a.pruned.net.n} kept ({len(kv)} key-value); rank 1: "
            f"lowest {float(a.blocks.rank1[kv].min()):.3f}; -min/max: mean "
            f"{float(a.blocks.negative_peak[kv].mean()):.2f}"
        )


def print_io_fits(config, analyses: Sequence, eval_loss, n: int) -> None:
    """The input-output gated networks of size ``n`` trained with the squared error, one line
    per seed: accuracy, held-out loss (``eval_loss``: one per member of ``config.members("io")``),
    R^2_SD and the fitted code of the keys (``analyses``: their ``RecallAnalysis``)."""
    print(f"input-output gating, n = m = {n}, squared error: the fit per seed")
    for e, (seed, size) in enumerate(config.members("io")):
        if size == n:
            a = analyses[e]
            print(
                f"seed {seed}: accuracy {a.accuracy:.2f}, MSE {float(eval_loss[e]):.3f}, "
                f"R2_SD {a.sd_fit.r2:.3f}, code {np.round(a.sd_fit.code.numpy(), 2).tolist()}"
            )


def recall_records(
    values: Mapping[str, tuple[float, str]], config, *, profile: str, run: str = ""
) -> list:
    """One ``scorecard.record`` per entry of ``values`` (id -> (ours, note): the output of
    ``recall_tables.scorecard_values`` or of a recorded reading), in their order, with the
    seeds of ``config`` and its budget (``verdict.budget`` of App. D.3 at its steps and seeds;
    the rows of ``recall_tables.CE_ROWS`` at the steps of the cross-entropy networks they
    read, ``config.ce_train``); ``run``: the recorded run they were read from."""
    seeds = len(config.seeds)

    def budget(id_: str) -> str:
        tc = config.ce_train if id_ in CE_ROWS else config.train
        return verdict.budget("appD3", steps=tc.steps, seeds=seeds)

    return [
        scorecard.record(
            id_, ours, profile=profile, seeds=seeds, note=note, run=run, budget=budget(id_)
        )
        for id_, (ours, note) in values.items()
    ]
