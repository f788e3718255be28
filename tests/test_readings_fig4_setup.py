"""The readings of the Fig. 4B setup check (readings/fig4_setup): the numbers the chapter "Other
RNNs in context" quotes come from planted losses, a pilot is found by family, change and steps,
the check's rows carry their source, rate and OOD ratio, and the cosine schedule is read."""

import dataclasses

import pytest
import torch

from gated_attention.engine import TrainConfig
from gated_attention.experiments import families_in_context as fic
from gated_attention.experiments import setup_pilots as sp
from gated_attention.readings import fig4_setup as f4

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


def test_setup_numbers_read_the_check():
    config, tensors = planted(
        ("gated", "lstm", "gru", "lru", "lru_inout"),
        [[1.13, 1.03], [1.0, 0.98], [0.88, 0.92], [2.3, 2.5], [3.7, 3.9]],
        [[1.1, 1.1], [1.12, 1.12], [1.1, 1.1], [2.4, 2.4], [3.8, 3.8]],
    )
    n = f4.setup_numbers(config, tensors, GD, GD_OOD)
    assert n["gated-in"] == pytest.approx(1.08)
    assert (n["gated-low"], n["gated-high"]) == pytest.approx((1.03, 1.13))
    # the distances to GD, in per cent: the chapter prints them whole
    assert n["gated-above"] == pytest.approx(8) and n["gru-below"] == pytest.approx(10)
    assert n["gru-ood-above"] == pytest.approx(10) and n["lstm-ood-above"] == pytest.approx(12)
    assert (n["lru-low"], n["lru-high"]) == pytest.approx((2.4, 3.8))
    assert n["zero"] == pytest.approx(37 / 7) and n["zero-ood"] == pytest.approx(37 / 7)


def test_lru_init_numbers_read_the_check_and_its_rate_search():
    config, tensors = planted(
        ("lru", "lru_inout", "lru_inout_mlp"),
        [[2.32, 2.26], [0.845, 0.837], [2.36, 1.35]],
        [[2.4, 2.3], [0.962, 0.966], [2.4, 1.5]],
    )
    n = f4.lru_init_numbers(config, tensors, GD, GD_OOD)
    assert n["inout-in"] == pytest.approx(0.841) and n["inout-ood"] == pytest.approx(0.964)
    assert n["lru-searched"] == pytest.approx(0.85)  # the LRU at its chosen rate, lr_grid[0]
    assert n["lru-rate"] == config.lr_grid[0]
    assert n["lru-scored"] == pytest.approx(2.29)
    assert (n["mlp-low"], n["mlp-high"]) == pytest.approx((1.35, 2.36))


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
    assert f4.pilot_numbers(pairs, GD) == pytest.approx(
        {"readout-fifth": 6, "readout-all": 1, "lr1e-3": 2.4, "sqrt3": 2.3, "scale3": 1.06},
        abs=1e-4,  # the planted losses are float32
    )
    with pytest.raises(ValueError, match="0 pilots of 'gated'"):
        f4.pilot_loss(pairs, GD, "gated", change, 2000)
    with pytest.raises(ValueError, match="2 pilots"):
        f4.pilot_loss(pairs + pairs[:1], GD, "gated", "lr 0.01, warm-up 200", 1000)


def test_the_checks_rows_carry_their_source_rate_and_ood_ratio():
    config, tensors = planted(("gru", "lru"), [[1.0, 1.08], [2.0, 2.0]], [[1, 1], [2, 2]])
    gru, lru = f4.setup_scored(config, tensors, GD, GD_OOD, source="recorded run x")
    assert gru.id == "fig4b.setup.gru_learns" and gru.ours == pytest.approx(1.04)
    assert gru.note == f"recorded run x; lr {config.lr_grid[0]:g}; OOD / GD 1"
    assert (gru.seeds, gru.run, gru.interval, gru.before) == (2, f4.SETUP_RUN, None, None)
    assert lru.id == "fig4b.setup.lru_learns" and lru.ours == pytest.approx(2.0)
    line = f4.setup_lines(config, tensors, GD, GD_OOD)[1]
    assert (line.family, line.in_dist, line.in_seeds) == ("LRU (2 layers)", 2.0, (2.0, 2.0))


def test_late_rate_reads_the_cosine_schedule():
    train = TrainConfig(steps=1000, batch_size=8, lr=1.0, eta_min=0.0, warmup_steps=0)
    left, end = f4.late_rate(train)  # 0.5 (1 + cos(0.8 pi)) = 0.0955
    assert f"{left:.1%}" == "9.5%" and end == 0.0
