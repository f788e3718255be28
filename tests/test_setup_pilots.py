"""The pilots of the Fig. 4B setup check: each change reaches the parameters or the forward it
names, the smoke pilots train end to end, the normalised LRU forward is the plain one with a
normalisation added, their table reads planted runs, and bad pilots are refused by name."""

import dataclasses

import pytest
import torch

from gated_attention.experiments import setup_pilots as sp
from gated_attention.models import lru, lru_pilots
from gated_attention.readings.fig4_setup import pilot_lines

GD = 7 / 74


def test_scales_reach_the_parameters_they_name():
    base = sp.PilotConfig(family="lru").params()
    scaled = sp.PilotConfig(family="lru", init_scale=2.0, skip_scale=0.5).params()
    for k in base:
        if k in ("W_emb", "W_out", "l1_W_1", "l1_W_2", "l2_W_1", "l2_W_2"):
            torch.testing.assert_close(scaled[k], 2.0 * base[k])
        elif k in ("l1_D", "l2_D"):
            torch.testing.assert_close(scaled[k], 0.5 * base[k])
        else:  # recurrence, B, C and biases are left as drawn
            torch.testing.assert_close(scaled[k], base[k])
    mlp = sp.PilotConfig(family="lru_inout_mlp", init_scale=2.0).params()
    mlp0 = sp.PilotConfig(family="lru_inout_mlp").params()
    torch.testing.assert_close(mlp["l1_mlp_in_W1"], 2.0 * mlp0["l1_mlp_in_W1"])
    gated = sp.PilotConfig(family="gated", readout_scale=0.1).params()
    torch.testing.assert_close(gated["D"], 0.1 * sp.PilotConfig(family="gated").params()["D"])
    gru = sp.PilotConfig(family="gru", readout_scale=0.1).params()
    torch.testing.assert_close(gru["W_o"], 0.1 * sp.PilotConfig(family="gru").params()["W_o"])


def test_prenorm_is_the_plain_forward_plus_a_normalisation(monkeypatch):
    P = sp.PilotConfig(family="lru_inout").params()
    x = torch.randn(1, 5, 13, 6, dtype=torch.float64)
    u = lru_pilots.normalise(torch.randn(4, 7, dtype=torch.float64) * 3 + 2)
    torch.testing.assert_close(u.mean(-1), torch.zeros(4, dtype=torch.float64))
    ones = torch.ones(4, dtype=torch.float64)
    torch.testing.assert_close(u.var(-1, unbiased=False), ones, rtol=1e-4, atol=0)  # eps 1e-5
    assert not torch.allclose(lru_pilots.forward_prenorm(x, P), lru.forward(x, P))
    # the LRU (no input GLU) feeds each recurrence the normalised u (eps: var within 0.1%)
    seen, layer = [], lru.lru_layer
    monkeypatch.setattr(lru, "lru_layer", lambda v, P, l: seen.append(v) or layer(v, P, l))
    lru_pilots.forward_prenorm(x, sp.PilotConfig(family="lru").params())
    assert len(seen) == 2
    for v in seen:
        torch.testing.assert_close(v.mean(-1), torch.zeros_like(v[..., 0]))
        torch.testing.assert_close(
            v.var(-1, unbiased=False), torch.ones_like(v[..., 0]), rtol=1e-3, atol=0
        )
    monkeypatch.setattr(lru, "lru_layer", layer)
    monkeypatch.setattr(lru_pilots, "normalise", lambda u: u)
    torch.testing.assert_close(lru_pilots.forward_prenorm(x, P), lru.forward(x, P))


@pytest.mark.slow
def test_smoke_pilots_train_end_to_end():
    configs = sp.pilot_configs("smoke")
    assert [c.family for c in configs[:4]] == ["gated", "gated", "gated", "lru"]
    assert configs[-4].prenorm and configs[-4].init_scale > 1
    assert configs[-1].init_scale == 3.0 and configs[-1].train.steps > configs[-4].train.steps
    for config in (configs[0], configs[-4], configs[-1]):
        tensors, _ = config.compute(progress=False)
        assert tensors["eval_loss"].shape == (1,) and torch.isfinite(tensors["eval_loss"]).all()
        assert tensors["train_curve"].shape == (config.train.steps // config.train.log_every,)


def test_pilot_lines_read_planted_runs():
    base = sp.PilotConfig()
    runs = [
        (base, {"eval_loss": torch.tensor([2 * GD]), "train_curve": torch.tensor([5 * GD, GD])}),
        (
            dataclasses.replace(base, prenorm=True, init_scale=3**0.5),
            {"eval_loss": torch.tensor([float("nan")]), "train_curve": torch.tensor([GD])},
        ),
    ]
    long = dataclasses.replace(base, train=dataclasses.replace(base.train, steps=5000))
    curve = torch.arange(1.0, 26.0) * GD  # 25 windows: five are shown, the last one last
    runs.append((long, {"eval_loss": torch.tensor([GD]), "train_curve": curve}))
    first, scaled, long = pilot_lines(runs, GD)
    assert (first.family, first.change, first.steps) == (
        "LRU (2 layers)",
        "lr 0.01, warm-up 200",
        1000,
    )
    assert (first.loss, *first.curve) == pytest.approx((2.0, 5.0, 1.0))  # float32 losses
    assert long.steps == 5000 and long.loss == pytest.approx(1.0)
    assert long.curve == pytest.approx((6, 11, 15, 20, 25))  # five windows, the last one last
    assert "init_scale 1.73, prenorm" in scaled.change and scaled.loss == float("inf")
    with pytest.raises(ValueError, match="GD loss must be positive"):
        pilot_lines(runs, 0.0)


def test_bad_pilots_are_refused_by_name():
    with pytest.raises(ValueError, match="apply to the LRU families"):
        sp.PilotConfig(family="gru", prenorm=True)
    with pytest.raises(ValueError, match="apply to the LRU families"):
        sp.PilotConfig(family="gated", init_scale=2.0)
    with pytest.raises(ValueError, match="init_scale must be a finite scale"):
        sp.PilotConfig(init_scale=float("nan"))
    with pytest.raises(ValueError, match="unknown family"):
        sp.PilotConfig(family="transformer")


def test_pilot_set_is_its_pilots_and_rebuilds_from_its_entry(tmp_path, monkeypatch):
    """The set trains each pilot as the pilot alone does; its config survives meta.json."""
    import json

    from gated_attention.experiments.cache import _config_dict
    from gated_attention.experiments.registry import config_from_dict

    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))
    from gated_attention import experiments

    pilots = experiments.pilot_configs("smoke")
    chosen = experiments.PilotSetConfig(pilots=(pilots[0], pilots[4]))
    run = experiments.run(chosen, progress=False)
    alone = experiments.run(pilots[4], progress=False)
    (first, _), (second, t) = chosen.pairs(run.tensors)
    assert first == pilots[0] and second == pilots[4]
    assert torch.equal(t["eval_loss"], alone.tensors["eval_loss"])
    stored = json.loads(json.dumps(_config_dict(chosen), default=str))
    assert config_from_dict(stored) == chosen  # pilots rebuilt as PilotConfig, not dicts
    assert experiments.pilot_set_config("quick") == experiments.pilot_set_config("paper")
    with pytest.raises(ValueError, match="non-empty tuple of PilotConfig"):
        experiments.PilotSetConfig(pilots=())
