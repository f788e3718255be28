"""Capped memory (constructions/capped_memory.py, experiments/capped_memory.py and
TrainConfig.lam_max): the error law on a planted case, banks, the cap in training."""

import dataclasses
import math

import pytest
import torch

from gated_attention.constructions.capped_memory import (
    CappedPoint,
    bank_coefficients,
    cap_memory,
    capped_errors,
    check_lam_max,
    constant_input_error,
    fit_exponent,
    memory_kernel,
    planted_error,
)
from gated_attention.constructions.gated_rnn import construct_rnn
from gated_attention.engine import TrainConfig
from gated_attention.experiments import run
from gated_attention.experiments.capped_memory import (
    capped_construction_loss,
    capped_memory_config,
    capped_memory_configs,
)
from gated_attention.models.attention import random_attention
from gated_attention.readings.beyond import capped_students


def _constant_input_error(lam_max, T, banks=1, d=3):
    """Relative error at step T of the capped construction on x_t = x for every t (the
    readable twin of ``constant_input_error``)."""
    layer = random_attention(d, seed=0)
    rnn = cap_memory(construct_rnn(layer, "symmetric"), lam_max, banks=banks)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1, 1, d, generator=g, dtype=torch.float64)
    x = x.expand(1, T, d).contiguous()
    with torch.no_grad():
        y, y_cap = layer(x)[0, -1], rnn(x, mode="reference")[0, -1]
    return float((y - y_cap).norm() / y.norm())


@pytest.mark.parametrize("banks", [1, 2])
def test_constant_input_error_agrees_with_its_twin(banks):
    for lam_max, T in ((0.99, 30), (0.9, 8)):
        measured = constant_input_error(lam_max, T, banks=banks, seed=1)
        assert abs(measured - planted_error(lam_max, T, banks)) < 1e-10
        assert abs(_constant_input_error(lam_max, T, banks) - measured) < 1e-10


@pytest.mark.parametrize("lam_max", [0.999, 0.99, 0.9, 0.5])
@pytest.mark.parametrize("T", [1, 7, 40])
def test_planted_constant_input_follows_the_closed_form(lam_max, T):
    closed = 1 - (1 - lam_max**T) / (T * (1 - lam_max))
    assert planted_error(lam_max, T) == pytest.approx(closed, abs=1e-15)
    assert abs(_constant_input_error(lam_max, T) - closed) < 1e-10


@pytest.mark.parametrize("banks", [2, 3])
def test_banks_follow_their_kernel(banks):
    lam, T = 0.95, 20
    expected = sum((1 - lam**k) ** banks for k in range(T)) / T
    assert planted_error(lam, T, banks) == pytest.approx(expected, rel=1e-12)
    assert abs(_constant_input_error(lam, T, banks) - expected) < 1e-10
    assert _constant_input_error(lam, T, banks) < _constant_input_error(lam, T, 1)


def test_bank_coefficients_and_kernel():
    assert bank_coefficients(1) == [1]
    assert bank_coefficients(2) == [2, -1]
    assert bank_coefficients(3) == [3, -3, 1]
    for p in (1, 2, 3):
        z = 0.7
        assert sum(c * z ** (j + 1) for j, c in enumerate(bank_coefficients(p))) == (
            pytest.approx(1 - (1 - z) ** p)
        )
        assert memory_kernel(1.0, 10, p) == 1 and memory_kernel(0.9, 0, p) == 1


def test_no_cap_is_the_construction_and_banks_keep_m():
    layer = random_attention(4, seed=1)
    rnn = construct_rnn(layer, "symmetric")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 12, 4, generator=g, dtype=torch.float64)
    with torch.no_grad():
        assert (cap_memory(rnn, 1.0)(x) - layer(x)).abs().max() < 1e-10
        assert (cap_memory(rnn, 0.9)(x) - layer(x)).abs().max() > 1e-2
    two = cap_memory(rnn, 0.9, banks=2)
    assert (two.n, two.m) == (rnn.n + 10, rnn.m)
    lam = two.lam.detach()
    assert float(lam.max()) == pytest.approx(0.9) and float(lam[1]) == pytest.approx(0.81)


def test_fit_exponent_on_a_planted_power_law():
    Ts = (16, 64, 256, 1000)
    pts = [CappedPoint(1 - 1e-4, T, 1, 0.3 * (T * 1e-4) ** 1.5) for T in Ts]
    assert fit_exponent(pts) == pytest.approx(1.5, abs=1e-12)
    with pytest.raises(ValueError, match="at least two points"):
        fit_exponent(pts[:1])


def test_measured_error_is_first_order_and_banks_second():
    lams, Ts = (0.9999, 0.999), (16, 64)
    one = fit_exponent(capped_errors(lams, Ts, seeds=(0,), batch=8))
    two = fit_exponent(capped_errors(lams, Ts, seeds=(0,), batch=8, banks=2))
    assert 0.9 < one < 1.1 and 1.8 < two < 2.2


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5, float("nan"), "0.9", True, None])
def test_lam_max_is_validated(bad):
    with pytest.raises(ValueError, match="lam_max"):
        check_lam_max(bad)
    with pytest.raises(ValueError, match="TrainConfig.lam_max"):
        TrainConfig(steps=10, lam_max=bad)
    with pytest.raises(ValueError, match="lam_max"):
        capped_memory_config("smoke", 8, bad)


def test_config_validation_names_the_problem():
    with pytest.raises(ValueError, match="unknown profile"):
        capped_memory_config("fast", 8, 0.9)
    with pytest.raises(ValueError, match="T must be a positive integer"):
        capped_memory_config("smoke", 0, 0.9)
    with pytest.raises(ValueError, match="banks must be a positive integer"):
        planted_error(0.9, 8, banks=0)
    with pytest.raises(ValueError, match="side=False"):
        rnn = construct_rnn(random_attention(2, seed=0), "side")
        cap_memory(rnn, 0.9)


def test_nu_min_is_the_cap():
    assert TrainConfig(steps=1).nu_min is None
    lam = math.exp(-math.exp(TrainConfig(steps=1, lam_max=0.9).nu_min))
    assert lam == pytest.approx(0.9, abs=1e-15)


@pytest.mark.parametrize("mode", ["fast", "reference"])
def test_training_keeps_lam_below_the_cap(mode, tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))
    config = capped_memory_config("smoke", 8, 0.6)
    config = dataclasses.replace(
        config, lam_range=(0.0, 1.0), train=dataclasses.replace(config.train, mode=mode)
    )
    res = run(config, progress=False)
    lam = torch.exp(-torch.exp(res.params["nu"]))
    assert float(lam.max()) <= 0.6 + 1e-5  # started in U(0, 1): projected (float32)
    assert float(lam.max()) == pytest.approx(0.6, abs=1e-5)  # some neuron sits at the cap
    uncapped = dataclasses.replace(config.train, lam_max=1.0)
    free = dataclasses.replace(config, train=uncapped)
    lam_free = torch.exp(-torch.exp(run(free, progress=False).params["nu"]))
    assert float(lam_free.max()) > 0.6  # without the cap the same run goes above it
    rows = capped_students(config, res, prune_tol=0.0)
    assert len(rows) == 1 and rows[0].lam_top <= 0.6 + 1e-5 and rows[0].n == 16


def test_capped_construction_loss_grows_with_T_and_the_cap():
    configs = capped_memory_configs("smoke")
    loss = {k: float(capped_construction_loss(c)[0]) for k, c in configs.items()}
    assert loss[(8, 1.0)] < 1e-20 and loss[(32, 1.0)] < 1e-20
    assert loss[(8, 0.99)] < loss[(8, 0.9)] < loss[(32, 0.9)]
    assert loss[(32, 0.99)] < loss[(32, 0.9)]
    two = float(capped_construction_loss(configs[(32, 0.9)], banks=2)[0])
    assert two < loss[(32, 0.9)]
