"""``python -m lab.cpu_plan``: the missing CPU-budget runs, and training them."""

import pytest

from gated_attention.experiments import cpu_budget
from lab import cpu_plan


def test_every_run_of_the_cpu_budget_is_planned_once():
    names = [cpu_plan.label(*r) for r in cpu_plan.all_runs()]
    assert len(names) == len(set(names))
    assert {e for e, _ in cpu_plan.all_runs()} == set(cpu_budget.CPU_RUNS)
    assert "teacher-identification-cpu-x2" in names and "teacher-identification-cpu-x4" in names
    assert set(names) == set(cpu_plan.PREDICTED_MIN)  # a prediction for every run


def test_missing_leaves_out_what_is_recorded(monkeypatch):
    monkeypatch.setattr(cpu_plan, "recorded_names", lambda: ["how-many-neurons-A-cpu"])
    names = [cpu_plan.label(*r) for r in cpu_plan.missing()]
    assert "how-many-neurons-A-cpu" not in names and "how-many-neurons-B-cpu" in names
    assert cpu_plan.missing(["how-many-neurons-A-cpu"]) == []
    with pytest.raises(ValueError, match="not a run of the CPU budget: \\['fig9-cpu'\\]"):
        cpu_plan.missing(["fig9-cpu"])


def test_a_search_follows_its_main_run():
    runs = [
        ("architectures-teacher-lr", "cpu"),
        ("architectures-teacher", "cpu"),
        ("architectures-regression-lr", "cpu"),  # its main run recorded: on its own
        ("how-many-neurons-A", "cpu"),
    ]
    assert cpu_plan.chains(runs) == [
        [("architectures-teacher", "cpu"), ("architectures-teacher-lr", "cpu")],
        [("how-many-neurons-A", "cpu")],
        [("architectures-regression-lr", "cpu")],
    ]


def test_the_plan_prints_each_run_and_the_total():
    text = cpu_plan.format_plan([("how-many-neurons-A", "cpu"), ("associative-recall", "cpu")])
    want = cpu_plan.PREDICTED_MIN
    total = want["how-many-neurons-A-cpu"] + want["associative-recall-cpu"]
    assert "how-many-neurons-A-cpu" in text and text.splitlines()[-1].endswith(f"~{total}")
    assert cpu_plan.format_plan([]) == "every run of the CPU budget is recorded"


def test_run_plan_records_each_run_and_reports_a_dead_worker(tmp_path):
    runs = [("architectures-teacher", "cpu"), ("architectures-teacher-lr", "cpu")]
    # a stand-in for python that prints its arguments: each run is one dev.record call
    done = cpu_plan.run_plan(runs, workers=2, logs=tmp_path, python="echo")
    assert [(n, rc) for n, rc, _ in done] == [
        ("architectures-teacher-cpu", 0),
        ("architectures-teacher-lr-cpu", 0),
    ]
    log = (tmp_path / "architectures-teacher-cpu.log").read_text()
    assert log.split() == [
        "-m", "dev.record", "architectures-teacher", "--budget", "cpu",
        "--name", "architectures-teacher-cpu",
    ]  # fmt: skip
    # a run that fails stops its chain (the search after it is not recorded) and is reported
    failed = cpu_plan.run_plan(runs, workers=1, logs=tmp_path, python="false")
    assert [(n, rc) for n, rc, _ in failed] == [("architectures-teacher-cpu", 1)]
