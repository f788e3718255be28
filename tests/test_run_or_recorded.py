"""Runs that ship recorded are read, not retrained, unless asked (experiments.run_or_recorded),
and the quick runs of the chapters that read them do ship recorded (else make book retrains)."""

from __future__ import annotations

import dataclasses

import pytest

from gated_attention import experiments
from gated_attention.experiments import recorded_runs
from gated_attention.experiments.registry import experiment_config
from gated_attention.report.run_source import run_source

#: the quick runs the chapters read through run_or_recorded (recorded: make book's time)
QUICK_RECORDED = (
    "teacher-identification",
    "how-many-neurons-A",
    "how-many-neurons-B",
    "architectures-teacher-lr",
    "architectures-regression-lr",
)


@pytest.mark.parametrize("name", QUICK_RECORDED)
def test_quick_run_ships_recorded(name):
    assert experiments.recorded_match(experiment_config(name, "quick")) is not None


@pytest.mark.parametrize("task", ["teacher", "regression"])
def test_quick_fig4_main_run_ships_recorded(task):
    config = experiments.architectures_main_config(
        "quick", task, resolve=experiments.run_or_recorded
    )
    assert experiments.recorded_match(config) is not None


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


def test_run_source_names_the_recording_and_a_code_change():
    config = experiment_config("teacher-identification", "quick")
    result = experiments.run_or_recorded(config, retrain=False)
    line = run_source(result)
    commit = result.provenance["commit"][:7]
    assert result.path.name in line and commit in line and "unchanged since" in line
    stale = dataclasses.replace(result, meta={**result.meta, "code_hash": "0" * 64})
    assert "changed since: retrain" in run_source(stale)
    fresh = dataclasses.replace(result, provenance={}, cached=False)
    assert run_source(fresh).startswith("trained in this build")
