"""The associative recall experiment (gated_attention/experiments/associative_recall.py)."""

import dataclasses
import json

import pytest
import torch

from gated_attention import experiments as ex
from gated_attention.experiments import cache as cache_module
from gated_attention.experiments.associative_recall import (
    GATINGS,
    RecallConfig,
    associative_recall_config,
)
from gated_attention.models.gated_rnn import gated_rnn_forward
from gated_attention.tasks.associative_recall import AssociativeRecall


def test_smoke_compute_stores_every_gating(tmp_path):
    config = associative_recall_config("smoke")
    tensors, metrics = config.compute(checkpoint=tmp_path / "checkpoint.pt", progress=False)
    assert set(tensors) == set(GATINGS) == {"io", "side", "io-ce"}
    assert list(tmp_path.iterdir()) == []  # checkpoints and finished gatings are cleaned up
    batch = config.evaluation_batch()
    for gating in GATINGS:
        t = tensors[gating]
        members = config.members(gating)
        assert t["sizes"][:, 0].tolist() == [n for _, n in members]
        assert t["sizes"][:, 1].tolist() == [0 if gating == "side" else n for _, n in members]
        assert t["seeds"].tolist() == [seed for seed, _ in members]
        assert t["losses"].shape == (len(t["loss_steps"]), len(members))
        assert int(t["loss_steps"][-1]) == config.train.steps
        nets = config.networks(tensors, gating)
        assert [(r.n, r.side) for r in nets] == [(n, gating == "side") for _, n in members]
        with torch.no_grad():  # the stored accuracy, recomputed from the stored networks
            y = gated_rnn_forward(batch.x, nets[-1].params())[:, -1]
        acc = float((y.argmax(1) == batch.answer).double().mean())
        assert float(t["eval_accuracy"][-1]) == pytest.approx(acc)
        assert metrics[f"{gating}_accuracy"] == t["eval_accuracy"].tolist()
    assert torch.isfinite(tensors["io-ce"]["eval_loss"]).all()


def test_a_finished_gating_is_not_trained_again(tmp_path):
    config = associative_recall_config("smoke", gatings=("io", "side"))
    first, _ = config.compute(checkpoint=None, progress=False)
    planted = {k: v for k, v in first["io"].items()}
    planted["eval_accuracy"] = torch.full_like(planted["eval_accuracy"], 0.5)  # a marker
    torch.save(planted, tmp_path / "gating-io-done.pt")  # the protocol's file of a done job
    again, _ = config.compute(checkpoint=tmp_path / "checkpoint.pt", progress=False)
    assert torch.equal(again["io"]["eval_accuracy"], planted["eval_accuracy"])
    assert torch.equal(again["side"]["params"]["W_side"], first["side"]["params"]["W_side"])
    assert not (tmp_path / "gating-io-done.pt").exists()


def test_the_ablation_starts_where_io_starts():
    config = associative_recall_config("smoke")
    a, b = config.student("io", 1, 6), config.student("io-ce", 1, 6)
    for k, v in a.params().items():
        assert torch.equal(v, b.params()[k])
    assert config.student("side", 1, 6).side


def test_profiles_and_the_registry():
    quick, paper = associative_recall_config("quick"), associative_recall_config("paper")
    assert len(quick.seeds) >= 3 and len(paper.seeds) >= 5
    assert quick.task == paper.task == AssociativeRecall(4, 4)
    assert max(quick.sizes) == 32 and quick.largest("side") == [15, 16, 17]
    assert ex.experiment_config("associative-recall", "quick") == quick
    for profile in ex.PROFILES:
        config = associative_recall_config(profile)
        stored = json.loads(json.dumps(cache_module._config_dict(config), default=str))
        assert ex.config_from_dict(stored) == config


def test_bad_configs_are_named():
    with pytest.raises(ValueError, match="gatings"):
        RecallConfig(gatings=("io", "nope"))
    with pytest.raises(ValueError, match="at least one"):
        RecallConfig(sizes=())
    with pytest.raises(ValueError, match="sizes"):
        RecallConfig(sizes=(0,))
    with pytest.raises(TypeError, match="AssociativeRecall"):
        RecallConfig(task="recall")
    with pytest.raises(ValueError, match="ce_sizes"):
        RecallConfig(ce_sizes=())
    with pytest.raises(TypeError, match="TrainConfig"):
        RecallConfig(train={"steps": 3})
    dataclasses.replace(RecallConfig(), ce_sizes=(), gatings=("io",))  # fine without io-ce


def test_the_chapter_numbers_come_from_every_member():
    from gated_attention.readings import recall as rd
    from gated_attention.readings import recall_scores as rr
    from gated_attention.report import scorecard

    config = associative_recall_config("smoke")
    tensors, _ = config.compute(checkpoint=None, progress=False)
    batch = config.evaluation_batch()
    analyses = {g: rd.analyse_members(config, tensors, g, batch) for g in config.gatings}
    rows = rd.size_rows(config, tensors, "side", analyses["side"])
    assert [r["n"] for r in rows] == list(config.sizes)
    assert all(0 <= r["accuracy"] <= 1 and r["kept"] <= r["n"] for r in rows)
    values = rr.scorecard_values(config, tensors, analyses)
    pruned = {i for i in scorecard.expected_ids(["associative_recall"]) if ".pruned." in i}
    assert set(values) == set(scorecard.expected_ids(["associative_recall"])) - pruned
    assert len(pruned) == 3  # the run at a decay budget that prunes: prune_budget_values
    top = config.largest("side")
    kept = sorted(analyses["side"][e].pruned.net.n for e in top)
    median = (kept[0] + kept[-1]) / 2  # two seeds: the median
    ours, note = values["appD3.side_neurons"]
    if median >= rr.PRUNES_BELOW * max(config.sizes):  # smoke's 30 steps prune nothing
        assert ours != ours and note.startswith("premise fails: pruning kept")
    else:
        assert ours == median and "premise" not in note
    for i, (ours, _) in values.items():
        assert ours == ours or i.startswith("appD3.side_neurons")  # finite, but the gated rows


def test_a_compression_row_needs_a_budget_that_prunes(monkeypatch):
    from types import SimpleNamespace

    from gated_attention.readings import recall_scores as rr

    config = associative_recall_config("smoke")  # largest size 8: the gate is at 7.2 neurons
    members = {g: config.largest(g) for g in config.gatings}

    def analyses(kept):
        net = [SimpleNamespace(n=k) for k in kept]
        fake = dict.fromkeys(range(len(config.members())))
        side = {
            e: SimpleNamespace(pruned=SimpleNamespace(net=n), score_kv=0.0)
            for e, n in zip(members["side"], net, strict=True)
        }
        io, ce = (
            {e: SimpleNamespace(score_kv=0.5, sd_fit=SimpleNamespace(r2=0.1)) for e in members[g]}
            for g in ("io", "io-ce")
        )
        return {**{g: fake for g in config.gatings}, "side": side, "io": io, "io-ce": ce}

    acc = torch.ones(len(config.members()))
    tensors = {g: {"eval_accuracy": acc} for g in config.gatings}
    ok = rr.scorecard_values(config, tensors, analyses([7, 7]))["appD3.side_neurons_compressed"]
    assert ok[0] == 7 and "premise" not in ok[1]  # 7 < 0.9 x 8: pruning acted
    gated = rr.scorecard_values(config, tensors, analyses([8, 7]))  # median 7.5 >= 7.2
    for i in ("appD3.side_neurons", "appD3.side_neurons_compressed"):
        assert gated[i][0] != gated[i][0] and gated[i][1].startswith("premise fails")
