"""The readings of the associative recall chapter (readings/recall.py): rows of numbers."""

from types import SimpleNamespace

import pytest
import torch

from gated_attention.constructions import recall_networks as cr
from gated_attention.experiments import associative_recall_config
from gated_attention.readings import recall as rr


@pytest.fixture(scope="module")
def smoke():
    config = associative_recall_config("smoke")
    return config, config.evaluation_batch()


def test_planted_networks_read_as_attention_or_squared_difference(smoke):
    config, batch = smoke
    K, V = config.task.n_keys, config.task.n_values
    planted = {
        "naive attention, side": cr.attention_rnn(K, V, side=True),
        "squared difference, io": cr.squared_difference_rnn(K, V),
    }
    naive, sd = rr.planted_rows(planted, config.task, batch)
    assert naive["network"] == "naive attention, side" and naive["n"] == 16
    assert naive["accuracy"] == pytest.approx(1.0) and naive["score_kv"] < 0.005
    assert naive["rank1"] == pytest.approx(1.0) and naive["neg_peak"] == pytest.approx(1 / 3, 0.05)
    assert sd["r2_sd"] == pytest.approx(1.0, abs=0.01)  # R2_SD of the SD network
    assert sd["score_kv"] > 0.5  # M is not readable from it


def test_side_seeds_read_the_largest_members_only():
    config = SimpleNamespace(seeds=(0, 1), largest=lambda gating: [2, 3])

    def member(kept, low):
        blocks = SimpleNamespace(
            rank1=torch.tensor([low, 1.0, 1.0]), negative_peak=torch.tensor([0.5, 1.0, 0.0])
        )
        values = SimpleNamespace(kv=[0, 1])
        return SimpleNamespace(
            pruned=SimpleNamespace(net=SimpleNamespace(n=kept)), values=values, blocks=blocks
        )

    seed0, seed1 = rr.side_seed_rows(config, [None, None, member(7, 0.9), member(6, 0.8)])
    assert seed0 == {
        "seed": 0,
        "kept": 7,
        "kv": 2,
        "rank1_min": pytest.approx(0.9),
        "neg_peak": 0.75,
    }
    assert (seed1["seed"], seed1["kept"], seed1["rank1_min"]) == (1, 6, pytest.approx(0.8))


def test_io_fits_read_the_members_of_one_size():
    config = SimpleNamespace(members=lambda gating: [(0, 4), (1, 4), (0, 6), (1, 6)])

    def member(acc, r2):
        fit = SimpleNamespace(r2=r2, code=torch.tensor([0.5, -0.25]))
        return SimpleNamespace(accuracy=acc, sd_fit=fit)

    analyses = [member(0.1, 0.2), member(0.3, 0.4), member(0.5, 0.999), member(0.75, 0.5)]
    loss = torch.tensor([0.9, 0.8, 0.125, 0.1])
    seed0, seed1 = rr.io_fit_rows(config, analyses, loss, 6)
    assert seed0 == {"seed": 0, "accuracy": 0.5, "mse": 0.125, "r2_sd": 0.999, "code": [0.5, -0.25]}
    assert (seed1["seed"], seed1["accuracy"]) == (1, 0.75)
    assert seed1["mse"] == pytest.approx(0.1)
