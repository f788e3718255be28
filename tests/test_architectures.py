"""The Fig. 4 experiment: every family trains through the engine, finished groups are not
trained twice, and the sweep picks each family's best rate."""

import dataclasses

import pytest
import torch

from gated_attention.experiments import architectures as arch


@pytest.mark.slow
def test_smoke_run_trains_every_family_and_scores_it(tmp_path):
    config = arch.architectures_config("smoke", "regression")
    tensors, metrics = config.compute(checkpoint=tmp_path / "checkpoint.pt", progress=False)
    G = len(config.groups())
    assert tensors["eval_loss"].shape == (G, 2) and tensors["ood_loss"].shape == (G, 2)
    assert torch.isfinite(tensors["eval_loss"]).all()
    for k, (fam, target, _) in enumerate(config.groups()):  # matched counts, within 25%
        assert abs(int(tensors["counts"][k]) - target) <= 0.25 * target, (fam, target)
    assert not list(tmp_path.glob("group-*"))  # no checkpoint left behind


@pytest.mark.slow
def test_finished_groups_are_not_trained_again(tmp_path, monkeypatch):
    config = arch.architectures_config("smoke", "teacher")
    config = dataclasses.replace(config, families=("gated", "lstm"), targets=(300,))
    first, _ = config.compute(checkpoint=None, progress=False)
    # plant group 0 as finished: compute must read it and train only group 1
    row = {
        "width": 7,
        "count": 300,
        "params": {"w": torch.zeros(2, 1)},
        "losses": torch.zeros(2, 2, dtype=torch.float64),  # 2 windows of the smoke run
        "wall_time": 0.0,
        "eval_loss": torch.tensor([5.0, 6.0], dtype=torch.float64),
    }
    torch.save(row, tmp_path / "group-0-done.pt")
    calls = []
    real = arch.train
    monkeypatch.setattr(arch, "train", lambda *a, **k: calls.append(k["desc"]) or real(*a, **k))
    again, _ = config.compute(checkpoint=tmp_path / "checkpoint.pt", progress=False)
    assert calls == ["architectures-teacher lstm 300"]
    assert again["eval_loss"][0].tolist() == [5.0, 6.0]
    torch.testing.assert_close(again["eval_loss"][1], first["eval_loss"][1])


def test_best_lrs_picks_the_lowest_mean_loss_per_family():
    config = arch.architectures_sweep_config("smoke", "teacher")
    groups = config.groups()
    loss = torch.ones(len(groups), 2, dtype=torch.float64)
    for k, (fam, _, lr) in enumerate(groups):
        if lr == (3e-3 if fam == "gru" else 1e-2):
            loss[k] = 0.5
    loss[groups.index(("lstm", groups[0][1], 3e-2))] = float("nan")  # diverged: never chosen
    best = dict(arch.best_lrs(config, {"eval_loss": loss}))
    assert best["gru"] == 3e-3 and best["gated"] == 1e-2 and best["lstm"] == 1e-2
    with pytest.raises(ValueError, match="sweep"):
        arch.best_lrs(arch.architectures_config("smoke"), {"eval_loss": loss})


def test_bad_configs_are_named():
    with pytest.raises(ValueError, match="unknown task"):
        arch.ArchitectureConfig(task="recall")
    with pytest.raises(ValueError, match="unknown family"):
        arch.ArchitectureConfig(families=("transformer",))
    with pytest.raises(ValueError, match="lrs names families"):
        arch.ArchitectureConfig(families=("gru",), lrs=(("lstm", 1e-3),))


def test_at_grid_edge_names_families_at_the_top_rate():
    config = arch.architectures_sweep_config("smoke", "teacher")
    top = max(config.lr_grid)
    lrs = (("gated", top), ("lstm", min(config.lr_grid)), ("gru", top))
    assert arch.at_grid_edge(config, lrs) == ["gated", "gru"]


def test_two_budgets_side_by_side(tmp_path):
    from gated_attention.report.family_plots import plot_budgets

    config = arch.architectures_config("smoke", "regression")
    tensors, _ = config.compute(checkpoint=tmp_path / "checkpoint.pt", progress=False)
    doubled = dict(tensors, eval_loss=2 * tensors["eval_loss"])
    fig = plot_budgets([("quick", config, tensors), ("longer", config, doubled)])
    left, right = fig.axes
    assert [left.get_title(), right.get_title()] == ["quick", "longer"]
    assert len(fig.legends) == 1 and not left.get_legend() and not right.get_legend()
    # each panel draws its own run: the right one's lines are twice the left one's
    for a, b in zip(left.get_lines(), right.get_lines(), strict=True):
        assert list(b.get_ydata()) == pytest.approx([2 * y for y in a.get_ydata()])
