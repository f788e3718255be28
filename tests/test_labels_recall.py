"""App. D.3's input-output row is scored on the networks trained as the paper trains them, with
a cross-entropy (gating io-ce), and the MSE-trained networks' value stands beside it, labelled
ours and not scored (readings.recall_scores, paper_values.json)."""

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from gated_attention.experiments import associative_recall_config
from gated_attention.readings import recall_scores as rr
from gated_attention.report import scorecard, verdict


def fit(kv, r2):
    return SimpleNamespace(score_kv=kv, sd_fit=SimpleNamespace(r2=r2))


def stand_ins(config, io=(0.0, 0.33), ce=(0.6, 0.95)):
    """Analyses of every member: MSE-trained io networks attention-like, the cross-entropy
    ones squared differences (``io``, ``ce``: Score KV and R^2_SD), side gating pruned to 5."""
    side = SimpleNamespace(score_kv=0.0, pruned=SimpleNamespace(net=SimpleNamespace(n=5)))
    n = {g: len(config.members(g)) for g in config.gatings}
    analyses = {"side": [side] * n["side"], "io": [fit(*io)] * n["io"]}
    if "io-ce" in config.gatings:
        analyses["io-ce"] = [fit(*ce)] * n["io-ce"]
    tensors = {g: {"eval_accuracy": torch.ones(k)} for g, k in n.items()}
    return tensors, analyses


def test_the_io_row_reads_the_cross_entropy_networks_and_the_mse_one_stands_beside():
    config = associative_recall_config("smoke")
    tensors, analyses = stand_ins(config)
    values = rr.scorecard_values(config, tensors, analyses)
    ours, note = values["appD3.io_is_not_attention"]
    assert ours == pytest.approx(min(0.6 - 0.3, 0.95 - 0.9))  # the cross-entropy networks
    assert "cross-entropy (io-ce)" in note and f"n = m = {max(config.ce_sizes)}" in note
    mse, mse_note = values["appD3.io_is_not_attention_mse"]
    assert mse == pytest.approx(min(0.0 - 0.3, 0.33 - 0.9))  # the MSE-trained ones
    assert mse_note.startswith("ours: trained with the MSE")
    # the two rows sit side by side, the paper's first
    ids = list(values)
    assert ids.index("appD3.io_is_not_attention_mse") == ids.index("appD3.io_is_not_attention") + 1


def test_without_cross_entropy_networks_the_premise_fails():
    config = dataclasses.replace(associative_recall_config("smoke"), gatings=("io", "side"))
    tensors, analyses = stand_ins(config)
    ours, note = rr.scorecard_values(config, tensors, analyses)["appD3.io_is_not_attention"]
    assert ours != ours and note.startswith("premise fails: no network of this run is trained")


def test_the_cross_entropy_row_carries_the_cross_entropy_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path))
    monkeypatch.setattr(scorecard, "_SESSION", [])
    config = associative_recall_config("quick")  # io-ce: 4,000 steps; the rest 10,000
    assert config.ce_train.steps != config.train.steps
    values = {"appD3.io_is_not_attention": (0.1, "ce"), "appD3.io_is_not_attention_mse": (-0.5, "")}
    steps = rr.row_steps(config, values)
    assert list(steps.values()) == [config.ce_train.steps, config.train.steps]
    seeds = len(config.seeds)
    ce, mse = (
        scorecard.record(
            i,
            ours,
            profile="quick",
            seeds=seeds,
            note=note,
            budget=verdict.budget("appD3", steps=steps[i], seeds=seeds),
        )
        for i, (ours, note) in values.items()
    )
    assert ce.budget == verdict.budget("appD3", steps=config.ce_train.steps, seeds=seeds)
    assert mse.budget == verdict.budget("appD3", steps=config.train.steps, seeds=seeds)
    assert (ce.status, mse.status) == ("pass", "report")  # the MSE row is shown, not scored


def test_the_rows_say_which_loss_and_the_rule_came_after_the_recorded_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path))
    values = scorecard.paper_values()
    io, mse = values["appD3.io_is_not_attention"], values["appD3.io_is_not_attention_mse"]
    assert "cross-entropy" in io["artefact"] and "cross-entropy" in io["words"]
    assert (mse["criterion"], mse["paper"]) == ("report", None)
    assert mse["source"].startswith("ours") and "MSE" in mse["artefact"]
    # the recorded run was read with MSE networks: there the new rule does not decide
    assert io["rule_set_after_runs"] == ["associative-recall-cpu"]
    row = scorecard.record(
        "appD3.io_is_not_attention", -0.7, profile="paper", run="associative-recall-cpu"
    )
    assert row.note.startswith(scorecard.RULE_AFTER) and verdict.undecided(row)
    claim = next(c for c in verdict.claims() if c.id == "appD3")
    assert claim.has("appD3.io_is_not_attention_mse")
    assert "appD3.io_is_not_attention_mse" not in claim.central
