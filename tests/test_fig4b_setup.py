"""The chapter "Other RNNs in context" (report/fig4b_setup): its captions read the config, the
numbers its prose quotes come from planted losses, a pilot is found by family, change and steps,
and the learners and outcomes follow the bar."""

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from gated_attention.engine import TrainConfig
from gated_attention.experiments import families_in_context as fic
from gated_attention.experiments import setup_pilots as sp
from gated_attention.report import fig4b_setup as f4

GD, GD_OOD = 7 / 74, 14 / 74


def planted(families, in_dist, ood):
    """A smoke setup check of ``families`` and two seeds whose losses over one GD step's are
    ``in_dist`` and ``ood`` (per family, per seed)."""
    config = dataclasses.replace(
        fic.setup_check_config("smoke"), families=tuple(families), seeds=(0, 1)
    )
    F, R = len(families), len(config.lr_grid)
    sweep = torch.full((F * R, 1), 5 * GD, dtype=torch.float64)
    sweep[0, 0] = 0.85 * GD  # the first family at the first rate of the grid
    return config, {
        "eval_loss": torch.tensor(in_dist, dtype=torch.float64) * GD,
        "ood_loss": torch.tensor(ood, dtype=torch.float64) * GD_OOD,
        "lrs": torch.full((F,), config.lr_grid[0], dtype=torch.float64),
        "widths": torch.arange(F) + 10,
        "counts": torch.arange(F) + 4000,
        "train_curves": torch.ones(F, 10, 2, dtype=torch.float64),
        "sweep_eval_loss": sweep,
    }


def test_setup_numbers_read_table_1():
    config, tensors = planted(
        ("gated", "lstm", "gru", "lru", "lru_inout"),
        [[1.13, 1.03], [1.0, 0.98], [0.88, 0.92], [2.3, 2.5], [3.7, 3.9]],
        [[1.1, 1.1], [1.12, 1.12], [1.1, 1.1], [2.4, 2.4], [3.8, 3.8]],
    )
    numbers = f4.setup_numbers(config, tensors, GD, GD_OOD)
    assert numbers["fig4b-gated-in"] == "1.08"
    assert (numbers["fig4b-gated-low"], numbers["fig4b-gated-high"]) == ("1.03", "1.13")
    assert numbers["fig4b-gated-above"] == "8%" and numbers["fig4b-gru-below"] == "10%"
    assert numbers["fig4b-gru-ood-above"] == "10%" and numbers["fig4b-lstm-ood-above"] == "12%"
    assert (numbers["fig4b-lru-low"], numbers["fig4b-lru-high"]) == ("2.4", "3.8")
    assert numbers["fig4b-zero"] == "5.29"  # 0.5 / (7/74) = 37/7


def test_lru_init_numbers_read_table_4_and_its_rate_search():
    config, tensors = planted(
        ("lru", "lru_inout", "lru_inout_mlp"),
        [[2.32, 2.26], [0.845, 0.837], [2.36, 1.35]],
        [[2.4, 2.3], [0.962, 0.966], [2.4, 1.5]],
    )
    numbers = f4.lru_init_numbers(config, tensors, GD, GD_OOD)
    assert numbers["fig4b-inout-in"] == "0.84" and numbers["fig4b-inout-ood"] == "0.96"
    assert numbers["fig4b-lru-searched"] == "0.85"  # the LRU at its chosen rate, lr_grid[0]
    assert numbers["fig4b-lru-rate"] == "1e-2"
    assert numbers["fig4b-lru-scored"] == "2.3"
    assert (numbers["fig4b-mlp-low"], numbers["fig4b-mlp-high"]) == ("1.35", "2.36")


def pilot(family, steps, loss, **change):
    train = dataclasses.replace(sp.PILOT_TRAIN, **change.pop("train", {}), steps=steps)
    config = sp.PilotConfig(family=family, train=train, **change)
    return config, {"eval_loss": torch.tensor([loss * GD])}


def test_a_pilot_is_found_by_family_change_and_steps():
    pairs = [
        pilot("gated", 1000, 2.2),
        pilot("gated", 1000, 1.06, readout_scale=0.1),
        pilot("gated", 5000, 1.01, readout_scale=0.1),
        pilot("lru", 5000, 2.4, train={"lr": 1e-3}),
        pilot("lru", 5000, 2.3, init_scale=3**0.5),
        pilot("lru", 5000, 1.06, init_scale=3.0),
    ]
    change = "lr 0.01, warm-up 200, readout_scale 0.1"
    assert f4.pilot_loss(pairs, GD, "gated", change, 5000) == pytest.approx(1.01)
    assert f4.pilot_numbers(pairs, GD) == {
        "fig4b-pilot-readout-fifth": "6%",
        "fig4b-pilot-readout-all": "1%",
        "fig4b-pilot-lr1e-3": "2.4",
        "fig4b-pilot-sqrt3": "2.3",
        "fig4b-pilot-scale3": "1.06",
    }
    with pytest.raises(ValueError, match="0 pilots of 'gated'"):
        f4.pilot_loss(pairs, GD, "gated", change, 2000)
    with pytest.raises(ValueError, match="2 pilots"):
        f4.pilot_loss(pairs + pairs[:1], GD, "gated", "lr 0.01, warm-up 200", 1000)


def test_learners_and_outcomes_follow_the_bar():
    records = [
        SimpleNamespace(id="fig4b.setup.gru_learns", status="pass"),
        SimpleNamespace(id="fig4b.setup.lru_inout_learns", status="miss"),
    ]
    text = f4.learners_text(records, ("gru", "lru_inout", "lstm"))
    assert text.splitlines() == [
        "learn in-context regression on this budget: gru",
        "do not: lru_inout, lstm",
    ]
    assert f4.learners_text([], ("gru",)).startswith(
        "learn in-context regression on this budget: none"
    )
    config, tensors = planted(("gru", "lru"), [[1.0, 1.08], [2.0, 2.0]], [[1, 1], [2, 2]])
    lines = f4.outcome_text(config, tensors, GD, GD_OOD, bar=1.05).splitlines()
    assert lines[0].startswith("gru: learns in-context regression")  # 1.04 <= 1.05
    assert "(1.04 x GD in distribution, 1 x GD out of it)" in lines[0]
    assert lines[1].startswith("lru: does not learn")


def test_captions_name_the_budget_the_seeds_and_the_zero_predictor():
    config, tensors = planted(("gru", "lru"), [[1.0, 1.0], [2.0, 2.0]], [[1, 1], [2, 2]])
    text = f4.table1(config, tensors, GD, GD_OOD, "recorded run x")
    tc = config.train
    assert text.startswith(f"**Table 1.** Each family after {tc.steps:,} steps of batch ")
    assert "2 seeds (recorded run x)" in text and "scores 5.29 and 5.29." in text
    assert "| GRU |" in text and "| LRU (2 layers) |" in text
    assert f"held-out seed {config.lr_seed}" in f4.table2(config, tensors)
    assert f4.members_caption(1.05).startswith("**Table 7.**")
    assert "above 1.05 x one GD step's" in f4.members_caption(1.05)
    big = SimpleNamespace(targets=(500, 4000))
    assert f4.members_caption(1.05, config=big).startswith(
        "**Table 9.** The recorded run's seeds at 4,000 parameters"
    )


def test_late_rate_text_reads_the_cosine_schedule():
    train = TrainConfig(steps=1000, batch_size=8, lr=1.0, eta_min=0.0, warmup_steps=0)
    text = f4.late_rate_text(train)  # 0.5 (1 + cos(0.8 pi)) = 0.0955
    assert text.startswith("learning rate at the start of the last fifth: 9.5% of its peak")
    assert text.endswith("annealed to 0e+00 of it by the end")
