"""The rows of App. D.3 at a decay budget that prunes (readings/recall_scores.prune_budget_values)
and its config (experiments/associative_recall.prune_budget_config)."""

import math
from types import SimpleNamespace

import pytest
import torch

from gated_attention import experiments
from gated_attention.experiments.associative_recall import PRUNE_WEIGHT_DECAY
from gated_attention.readings import recall_scores as rr


def test_the_prune_budget_changes_only_the_decay_and_keeps_side_gating_at_64():
    paper = experiments.experiment_config("associative-recall", "paper")
    prune = experiments.experiment_config("associative-recall-prune", "paper")
    assert prune.gatings == ("side",) and prune.sizes == (64,) and prune.seeds == paper.seeds
    assert prune.train.weight_decay == PRUNE_WEIGHT_DECAY
    assert prune.train.lr * prune.train.weight_decay * prune.train.steps == pytest.approx(30)
    assert prune.train == paper.train.__class__(
        **{**paper.train.__dict__, "weight_decay": PRUNE_WEIGHT_DECAY}
    )


def fake(accuracy, kept, kv=0.01):
    config = SimpleNamespace(sizes=(64,), largest=lambda g: [0, 1, 2])
    tensors = {"side": {"eval_accuracy": torch.tensor(accuracy, dtype=torch.float64)}}
    analyses = {
        "side": [
            SimpleNamespace(pruned=SimpleNamespace(net=SimpleNamespace(n=k)), score_kv=kv)
            for k in kept
        ]
    }
    return rr.prune_budget_values(config, tensors, analyses)


def test_the_count_is_the_median_when_the_premises_hold():
    v = fake([1.0, 0.99, 0.98], [11, 13, 12])
    assert v["appD3.pruned.side_neurons"][0] == 12
    assert v["appD3.pruned.side_accuracy"][0] == pytest.approx(0.99)


def test_the_count_is_nan_when_the_network_stops_recalling_or_nothing_is_pruned():
    v = fake([0.9, 0.9, 0.9], [11, 13, 12])
    assert math.isnan(v["appD3.pruned.side_neurons"][0])
    assert "premise fails: held-out accuracy 0.900" in v["appD3.pruned.side_neurons"][1]
    v = fake([1.0, 1.0, 1.0], [60, 63, 58])
    assert math.isnan(v["appD3.pruned.side_neurons"][0])
    assert "kept 60 of 64" in v["appD3.pruned.side_neurons"][1]
    assert fake([1.0, 1.0, 1.0], [57, 57, 57])["appD3.pruned.side_neurons"][0] == 57
