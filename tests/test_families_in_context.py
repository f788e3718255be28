"""The Fig. 4B setup check: the smoke config runs end to end (rates from the held-out seed, the
scored seeds at them), the table reads planted losses, and bad configs are refused by name."""

import dataclasses

import pytest
import torch

from gated_attention.analysis.family_losses import setup_rows
from gated_attention.engine import TrainConfig
from gated_attention.experiments import families_in_context as fic
from gated_attention.experiments.registry import config_from_dict, experiment_config
from gated_attention.readings.fig4_setup import setup_lines

GD, GD_OOD = 7 / 74, 14 / 74


@pytest.mark.slow
def test_smoke_check_chooses_rates_on_the_held_out_seed_and_scores_the_others(tmp_path):
    config = fic.setup_check_config("smoke")
    config = dataclasses.replace(config, families=("gru", "lru"))
    tensors, metrics = config.compute(checkpoint=tmp_path / "checkpoint.pt", progress=False)
    F, E, R = len(config.families), len(config.seeds), len(config.lr_grid)
    assert tensors["eval_loss"].shape == (F, E) and tensors["ood_loss"].shape == (F, E)
    assert tensors["sweep_eval_loss"].shape == (F * R, 1)  # the search ran on lr_seed only
    assert torch.isfinite(tensors["eval_loss"]).all() and torch.isfinite(tensors["ood_loss"]).all()
    # each family trains at the rate with the lowest held-out loss of the search
    search = tensors["sweep_eval_loss"][:, 0].reshape(F, R)
    chosen = torch.tensor(config.lr_grid, dtype=torch.float64)[search.argmin(-1)]
    torch.testing.assert_close(tensors["lrs"], chosen)
    assert metrics["lrs"] == [[f, float(r)] for f, r in zip(config.families, chosen, strict=True)]
    for k in range(F):  # matched counts, within 25%
        assert abs(int(tensors["counts"][k]) - config.target) <= 0.25 * config.target
    assert not list(tmp_path.iterdir())  # no checkpoint or stage folder left behind


def planted():
    """A config of three families and planted results: GRU at GD, LSTM 2x, LRU at zero."""
    config = dataclasses.replace(
        fic.setup_check_config("smoke"), families=("gru", "lstm", "lru"), seeds=(0, 1)
    )
    K = 10
    curve = torch.ones(3, K, 2, dtype=torch.float64)
    curve[1, 8:] = 0.9  # LSTM: the last fifth 10% below the fifth before
    return config, {
        "eval_loss": torch.tensor([[GD, GD], [GD, 3 * GD], [0.5, float("nan")]]),
        "ood_loss": torch.tensor([[GD_OOD, GD_OOD], [2 * GD_OOD, 2 * GD_OOD], [1.0, 1.0]]),
        "lrs": torch.tensor([1e-2, 3e-2, 1e-2], dtype=torch.float64),
        "widths": torch.tensor([25, 21, 17]),
        "counts": torch.tensor([4153, 3909, 3811]),
        "train_curves": curve,
    }


def test_setup_rows_divide_by_the_gd_losses_and_read_the_late_fall():
    config, tensors = planted()
    gru, lstm, lru = setup_rows(config, tensors, GD, GD_OOD)
    assert gru.in_dist == pytest.approx((1.0, 1.0)) and gru.ood_mean == pytest.approx(1.0)
    assert lstm.in_dist_mean == pytest.approx(2.0) and lstm.ood == pytest.approx((2.0, 2.0))
    assert lstm.fall == pytest.approx(0.1) and gru.fall == pytest.approx(0.0)
    assert lstm.at_grid_edge and gru.at_grid_edge  # the smoke grid is (1e-2, 3e-2)
    grid = dataclasses.replace(config, lr_grid=(3e-3, 1e-2, 3e-2))
    assert [r.at_grid_edge for r in setup_rows(grid, tensors, GD, GD_OOD)] == [False, True, False]
    assert lru.in_dist[0] == pytest.approx(37 / 7) and lru.in_dist_mean == float("inf")
    with pytest.raises(ValueError, match="GD losses must be positive"):
        setup_rows(config, tensors, 0.0, GD_OOD)
    with pytest.raises(ValueError, match=r"\(families, seeds\) = \(2, 2\)"):
        setup_rows(dataclasses.replace(config, families=("gru", "lstm")), tensors, GD, GD_OOD)


def test_setup_lines_give_one_row_per_family_with_its_ratios():
    config, tensors = planted()
    gru, second, third = setup_lines(config, tensors, GD, GD_OOD)
    assert (gru.family, gru.width, gru.count, gru.lr, gru.edge) == ("GRU", 25, 4153, 0.01, True)
    assert gru.in_dist == pytest.approx(1) and gru.in_seeds == pytest.approx((1, 1))
    assert gru.fall == pytest.approx(0.0)
    assert second.lr == 0.03 and second.edge and second.in_dist == pytest.approx(2)
    assert second.in_seeds == pytest.approx((1, 3)) and second.fall == pytest.approx(0.1)
    assert third.in_dist == float("inf")  # a diverged seed is not hidden
    assert third.in_seeds[0] == pytest.approx(5.29, abs=5e-3) and third.in_seeds[1] == float("inf")


def test_bad_configs_are_refused_by_name():
    with pytest.raises(ValueError, match="held-out seed"):
        fic.SetupCheckConfig(seeds=(0, 1), lr_seed=1)
    with pytest.raises(ValueError, match="at least one scored seed"):
        fic.SetupCheckConfig(seeds=())
    with pytest.raises(ValueError, match="positive parameter count"):
        fic.SetupCheckConfig(target=0)
    with pytest.raises(ValueError, match="positive rates"):
        fic.SetupCheckConfig(lr_grid=(1e-2, -1e-3))
    with pytest.raises(ValueError, match="unknown family"):
        fic.SetupCheckConfig(families=("transformer",))
    with pytest.raises(TypeError, match="TrainConfig"):
        fic.SetupCheckConfig(train={"steps": 10})


def test_the_check_is_registered_and_rebuilds_from_its_stored_fields():
    config = experiment_config("fig4b-setup", "quick")
    assert config.train.steps == 5000 and config.train.batch_size == 128
    assert config.train.warmup_steps == 200 and config.lr_seed not in config.seeds
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    fields["train"] = dataclasses.asdict(config.train)
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
    again = config_from_dict({"type": "SetupCheckConfig", "fields": fields})
    assert again == config and isinstance(again.train, TrainConfig)


class _CapturedError(Exception):
    pass


def test_init_scales_reach_the_linear_maps_of_the_named_lru_family(monkeypatch):
    from gated_attention.experiments import architectures as arch

    seen = []

    def capture(tasks, params, config, **kw):
        seen.append(params)
        raise _CapturedError

    monkeypatch.setattr(arch, "train", capture)
    config = fic.setup_check_lru_init_config("smoke")
    assert config.families == ("lru", "lru_inout", "lru_inout_mlp")
    for scales in ((), config.init_scales):
        sweep = dataclasses.replace(config, init_scales=scales).sweep()
        with pytest.raises(_CapturedError):
            sweep.compute(progress=False)
    plain, scaled = seen
    for k, v in plain.items():
        linear = k in ("W_emb", "W_out", "l1_W_1", "l1_W_2", "l2_W_1", "l2_W_2")
        factor = 3**0.5 if linear else 1.0  # B, C, Dskip, the recurrence and biases as drawn
        torch.testing.assert_close(scaled[k], factor * v)
    with pytest.raises(ValueError, match="init_scales must name LRU families"):
        fic.SetupCheckConfig(init_scales=(("gru", 2.0),))
    with pytest.raises(ValueError, match="init_scales must name LRU families"):
        fic.SetupCheckConfig(families=("gru",), init_scales=(("lru", 2.0),))
    assert experiment_config("fig4b-setup-lru-init", "quick").init_scales == config.init_scales
