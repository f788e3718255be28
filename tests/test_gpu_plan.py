"""The plan of the paper-profile runs not yet recorded (gated_attention/tools/gpu_plan.py): which
runs, their predicted device time from the recorded GPU bench, and the command that trains and
records them all (tested end to end on the CPU in the smoke profile)."""

from __future__ import annotations

import pytest

from gated_attention.experiments import recorded_runs
from gated_attention.tools import gpu_plan
from gated_attention.tools.bench import recorded_benches


def test_the_missing_runs_are_those_without_a_recorded_paper_run():
    missing = gpu_plan.missing_runs("paper")
    for recorded in ("teacher-identification", "in-context-regression"):
        assert recorded not in missing  # -paper-gpu, -paper-cpu
    assert "optimiser-comparison-members" not in missing  # -paper
    assert {"how-many-neurons-A", "how-many-neurons-B", "associative-recall"} <= set(missing)


def test_the_prediction_is_the_recorded_bench_linear_in_members():
    bench = recorded_benches()["h200"]
    one, sixteen = 1e3 / bench["engine_steps_per_s"], 16e3 / bench["batched_steps_per_s"]
    assert gpu_plan.predict_ms(1, bench) == pytest.approx(one)
    assert gpu_plan.predict_ms(16, bench) == pytest.approx(sixteen)
    assert gpu_plan.predict_ms(31, bench) == pytest.approx(2 * sixteen - one)
    p = gpu_plan.plan("paper", names=["how-many-neurons-A", "teacher-identification-chosen"])
    a, chosen = p["runs"]
    assert (a["jobs"], a["members"], a["steps"]) == (1, 50, 1_000_000)  # one GPU ensemble
    assert a["device_s"] == pytest.approx(1_000_000 * gpu_plan.predict_ms(50, bench) / 1e3)
    assert chosen["members"] == 3 and chosen["gated_only"]
    assert p["total_s"] == pytest.approx(a["device_s"] + chosen["device_s"])
    table = gpu_plan.format_plan(p)
    assert "how-many-neurons-A" in table and "total" in table
    assert all(len(line) <= 100 for line in table.splitlines())


def test_the_plan_counts_a_families_search_and_a_recall_ablation():
    p = gpu_plan.plan("paper", names=["fig4b-setup", "associative-recall"])
    setup, recall = p["runs"]
    config = gpu_plan._config("fig4b-setup", "paper")
    assert setup["steps"] == len(config.families) * config.train.steps * (len(config.lr_grid) + 1)
    assert not setup["gated_only"]
    rc = gpu_plan._config("associative-recall", "paper")
    assert recall["steps"] == 2 * rc.train.steps + rc.ce_train.steps


def test_the_command_trains_and_records_every_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GATED_ATTENTION_DEVICE", raising=False)
    monkeypatch.setattr(recorded_runs, "RECORDED_ROOT", tmp_path / "recorded")
    names = ["capped-memory-T8-lam1", "teacher-identification-chosen"]
    assert gpu_plan.main(["--profile", "smoke", "--only", *names, "--run"]) == 0
    recorded = sorted(p.name for p in (tmp_path / "recorded").iterdir())
    assert recorded == sorted(f"{n}-smoke-gpu" for n in names)
    assert gpu_plan.run_plan("smoke", names) == []  # recorded already: nothing trains again


def test_the_plan_covers_every_registered_experiment():
    """Every experiment of the registry can be planned (a new config shape needs the plan to
    know its steps), and a set of pilots counts each pilot's own steps."""
    from gated_attention.experiments.registry import EXPERIMENTS

    p = gpu_plan.plan("paper", names=list(EXPERIMENTS))
    assert [r["name"] for r in p["runs"]] == list(EXPERIMENTS)
    pilots = next(r for r in p["runs"] if r["name"] == "fig4b-setup-pilots")
    config = gpu_plan._config("fig4b-setup-pilots", "paper")
    assert pilots["steps"] == sum(q.train.steps for q in config.pilots)
