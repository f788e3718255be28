"""Runs that ship recorded are read, not retrained, unless asked (experiments.run_or_recorded),
and the quick runs of the chapters that read them do ship recorded (else make book retrains)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from dev import quick_runs
from gated_attention import experiments
from gated_attention.experiments import recorded_runs
from gated_attention.experiments.cache import code_hash
from gated_attention.experiments.registry import experiment_config
from gated_attention.readings.provenance import source


def test_every_quick_run_the_chapters_read_ships_recorded():
    # a change of the training code is said under the run (readings.provenance) and by
    # dev.quick_runs, which re-records: it does not fail the tests
    rows = quick_runs.status()
    assert [exp for exp, _, _ in rows] == list(quick_runs.QUICK_RECORDED)
    assert all(name == quick_runs.label(exp) for exp, name, _ in rows), rows


def test_tensor_difference_is_zero_only_for_the_same_numbers():
    a = {"params": {"W": torch.tensor([1.0, float("nan")])}, "eval_loss": torch.ones(2)}
    same = {"params": {"W": torch.tensor([1.0, float("nan")])}, "eval_loss": torch.ones(2)}
    assert quick_runs.tensor_difference(a, same) == 0.0
    moved = {"params": {"W": torch.tensor([1.5, float("nan")])}, "eval_loss": torch.ones(2)}
    assert quick_runs.tensor_difference(a, moved) == 0.5
    timed = {**a, "step_time": torch.tensor([0.1])}
    assert quick_runs.tensor_difference(timed, {**a, "step_time": torch.tensor([0.2])}) == 0.0
    assert quick_runs.tensor_difference(a, {"params": a["params"]}) == float("inf")
    nan = {"params": {"W": torch.tensor([1.0, 2.0])}, "eval_loss": torch.ones(2)}
    assert quick_runs.tensor_difference(a, nan) == float("inf")  # a NaN where a number was


def test_a_changed_config_matches_nothing():
    config = experiment_config("teacher-identification", "quick")
    assert experiments.recorded_match(config) is not None
    steps = dataclasses.replace(config.train, steps=config.train.steps + 1)
    assert experiments.recorded_match(dataclasses.replace(config, train=steps)) is None


def test_recorded_unless_retrain(monkeypatch):
    config = experiment_config("teacher-identification", "quick")
    trained = []
    monkeypatch.setattr(recorded_runs, "run", lambda c, progress=True: trained.append(c))
    result = experiments.run_or_recorded(config, retrain=False)
    assert result.provenance["commit"] and result.config == config and not trained
    experiments.run_or_recorded(config, retrain=True)
    assert trained == [config]
    monkeypatch.setenv(recorded_runs.RETRAIN_ENV, "1")
    experiments.run_or_recorded(config)
    assert len(trained) == 2


def test_retrain_asked_reads_the_environment():
    env = recorded_runs.RETRAIN_ENV
    assert recorded_runs.retrain_asked({env: "1"})
    assert not recorded_runs.retrain_asked({env: "0"})
    assert not recorded_runs.retrain_asked({})
    with pytest.raises(ValueError, match="must be 0 or 1, got 'yes'"):
        recorded_runs.retrain_asked({env: "yes"})


def test_a_runs_source_names_the_recording_and_a_code_change():
    config = experiment_config("teacher-identification", "quick")
    result = experiments.run_or_recorded(config, retrain=False)
    today = {**result.meta, "code_hash": code_hash(config=config)}
    row = source(dataclasses.replace(result, meta=today))
    commit = result.provenance["commit"][:7]
    assert (row.run, row.read, row.commit, row.code) == (
        result.path.name, "recorded run", commit, "unchanged"
    )  # fmt: skip
    stale = dataclasses.replace(result, meta={**result.meta, "code_hash": "0" * 64})
    assert source(stale).code == "changed"
    fresh = dataclasses.replace(result, provenance={}, cached=False)
    assert (source(fresh).read, source(fresh).commit) == ("trained here", "-")


def test_rows_read_from_a_recorded_run_name_the_code_that_trained_it(tmp_path, monkeypatch):
    from gated_attention.report import run_source as rs
    from gated_attention.report import scorecard

    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path))
    monkeypatch.setattr(scorecard, "_SESSION", [])
    config = experiment_config("teacher-identification", "quick")
    result = experiments.run_or_recorded(config, retrain=False)
    commit = result.provenance["commit"][:7]
    today = dataclasses.replace(result, meta={**result.meta, "code_hash": code_hash(config=config)})
    stale = dataclasses.replace(result, meta={**result.meta, "code_hash": "0" * 64})
    assert rs.trained_by(today) == (
        f"trained by the code at commit {commit} (recorded run {result.path.name}; training "
        "code unchanged since)"
    )
    assert f"commit {commit}, not today's code" in rs.trained_by(stale)
    rows = [
        scorecard.record("fig2.lambda_one", 10, profile="quick", note="seed 0"),
        scorecard.record("fig2.lambda_zero", 4, profile="quick"),
        scorecard.record("fig2.lambda_one", 11, profile="paper", run="other-run"),
    ]
    stamped = rs.with_source(rows, stale)
    assert stamped[0].note == f"seed 0; {rs.trained_by(stale)}"
    assert stamped[1].note == rs.trained_by(stale)
    assert stamped[2] == rows[2]  # a recorded run's own row names its run already
    # stored again: the build's rows and this process's records carry the commit
    built = {r.id: r for r in scorecard.collect("quick")}
    assert all(commit in built[i].note for i in ("fig2.lambda_one", "fig2.lambda_zero"))
    latest = {(r.id, r.run): r for r in scorecard.session_records()}
    assert commit in latest[("fig2.lambda_one", "")].note
    assert rs.with_source(stamped, stale) == stamped  # said once
    # a run of this build: nothing to say
    fresh = dataclasses.replace(result, provenance={}, cached=False)
    assert rs.trained_by(fresh) == "" and rs.with_source(rows[:2], fresh) == rows[:2]
