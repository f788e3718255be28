"""The optimiser comparison (experiments/optimiser_comparison.py): a recorded network continued."""

import dataclasses

import matplotlib
import pytest
import torch

from gated_attention import experiments as ex
from gated_attention.experiments.optimiser_comparison import COUNT_NAMES, OPTIMISERS

matplotlib.use("Agg")  # tests only; chapters draw inline


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def short(**overrides):
    """A few steps of the smoke profile with a small held-out batch."""
    base = dataclasses.replace(
        ex.optimiser_comparison_config("smoke"), steps=4, counts_every=2, eval_batch=16
    )
    return dataclasses.replace(base, **overrides)


def test_smoke_runs_through_the_cache(cache):
    config = ex.optimiser_comparison_config("smoke")
    first = ex.run(config, progress=False)
    assert not first.cached and first.path.parent == cache
    again = ex.run(config, progress=False)
    assert again.cached
    t = again.tensors
    K = config.steps // config.counts_every + 1
    assert t["steps"].tolist() == list(range(0, config.steps + 1, config.counts_every))
    start_n = t["start"]["nu"].shape[0]
    for name in OPTIMISERS:
        assert t[name]["counts"].shape == (K, len(COUNT_NAMES))
        assert t[name]["train_loss"].shape == (K,)
        assert torch.isnan(t[name]["train_loss"][0]) and bool(
            torch.isfinite(t[name]["train_loss"][1:]).all()
        )
        assert t[name]["params"]["W_out1"].shape[1] == start_n
        assert float(t[name]["eval_loss"]) == pytest.approx(again.metrics["eval_loss"][name])
    # the recorded network's removed neurons were exactly zero: the pruned start is exact
    assert again.metrics["removed_max_abs"] == 0.0
    # pruned counts of the start: every hidden neuron is in one of the two lam groups
    n, one, zero, m = t["adamw"]["counts"][0].tolist()
    assert n == start_n == one + zero and m == t["start"]["W_out1"].shape[0]
    assert ex.config_from_dict(again.meta["config"]) == config


def test_a_learning_rate_of_zero_changes_nothing():
    config = short(lrs=tuple((name, 0.0) for name in OPTIMISERS))
    tensors, _ = config.compute(progress=False)
    start = {k: v.to(torch.float32).to(torch.float64) for k, v in tensors["start"].items()}
    for name in OPTIMISERS:
        for k, v in tensors[name]["params"].items():
            assert torch.equal(v, start[k]), (name, k)
        assert len(set(map(tuple, tensors[name]["counts"].tolist()))) == 1


def test_l2_in_the_gradient_is_not_decoupled_decay():
    def final(wd):
        pair = ("adamw", "adam_l2")
        config = short(optimisers=pair, weight_decays=tuple((o, wd) for o in pair))
        tensors, _ = config.compute(progress=False)
        return tensors["adamw"]["params"], tensors["adam_l2"]["params"]

    decoupled, l2 = final(0.05)
    assert max(float((decoupled[k] - l2[k]).abs().max()) for k in l2) > 1e-6
    decoupled, l2 = final(0.0)
    for k in l2:  # without weight decay AdamW is Adam
        assert torch.equal(decoupled[k], l2[k]), k


def test_the_config_checks_its_fields():
    assert ex.optimiser_comparison_config("quick").run == "teacher-identification-paper-seed0"
    with pytest.raises(ValueError, match="unknown optimiser"):
        short(optimisers=("adamw", "lion"))
    with pytest.raises(ValueError, match="lrs gives no value"):
        short(lrs=(("adamw", 1e-3),))
    with pytest.raises(ValueError, match="non-negative"):
        short(weight_decays=(("adamw", -1.0), ("adam_l2", 0.0), ("sgd_l2", 0.0)))
    with pytest.raises(ValueError, match="member 7 out of range"):
        short(member=7).compute(progress=False)


@pytest.mark.parametrize("name", OPTIMISERS)
def test_no_weight_decay_on_nu(name):
    from gated_attention.engine import TrainConfig
    from gated_attention.engine.loop import optimiser

    P = {k: torch.zeros(2, requires_grad=True) for k in ("W_in", "nu", "W_out", "D")}
    tc = TrainConfig(steps=10, lr=0.1, weight_decay=0.3, optimiser=name, schedule="constant")
    opt, _ = optimiser(P, tc, ("nu",))
    groups = opt.param_groups
    (nu_group,) = [g for g in groups if any(p is P["nu"] for p in g["params"])]
    assert nu_group["weight_decay"] == 0.0 and len(nu_group["params"]) == 1
    (rest,) = [g for g in groups if g is not nu_group]
    assert rest["weight_decay"] == 0.3 and len(rest["params"]) == 3
    assert rest["lr"] == 0.1
    kind = {"adamw": torch.optim.AdamW, "adam_l2": torch.optim.Adam, "sgd_l2": torch.optim.SGD}
    assert type(opt) is kind[name]
