"""A step's kernel time (lab.busy_time): the difference of two profiled runs over the steps,
None where a GPU's profiler saw nothing, and the table within the book's column."""

import json
import subprocess
from pathlib import Path

import pytest
import torch

from lab import busy_time as bt
from lab import step_times as st
from lab.device_time import bench_run


def _fake_profiles(monkeypatch, results):
    """kernel_times returns ``results`` in turn (each: (count, {name: seconds})); training is
    not run: the steps each call would train are kept in the list returned."""
    calls, trained = iter(results), []
    monkeypatch.setattr(bt, "kernel_times", lambda fn, device: (fn(), next(calls))[1])
    return trained


def test_a_steps_kernels_are_the_difference_of_two_profiles_over_the_steps(monkeypatch):
    """warm steps: 30 kernels, bmm 0.3 s; warm + 10 steps: 130 kernels, bmm 1.3 s, mul 0.2 s:
    10 kernels a step, 0.1 s of bmm and 0.02 s of mul, 0.12 s busy."""
    profiles = [(30, {"aten::bmm": 0.3}), (130, {"aten::bmm": 1.3, "aten::mul": 0.2})]
    trained = _fake_profiles(monkeypatch, profiles)
    r = bt.busy_per_step(trained.append, "cpu", steps=10, warm=2)
    assert trained == [2, 2, 12]  # compiling, then the two profiled calls
    assert r["kernels_per_step"] == pytest.approx(10.0)
    assert r["busy_s_per_step"] == pytest.approx(0.12)
    assert [k for k, _ in r["busy_top"]] == ["aten::bmm", "aten::mul"]
    assert r["busy_top"][0][1] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="steps and warm"):
        bt.busy_per_step(trained.append, "cpu", steps=0)


def test_no_kernel_seen_is_not_a_measurement(monkeypatch):
    trained = _fake_profiles(monkeypatch, [(0, {}), (0, {})])
    r = bt.busy_per_step(trained.append, "cuda", steps=10, warm=2)
    assert r["busy_s_per_step"] is None and r["kernels_per_step"] is None
    assert bt.format_busy([{"label": "x", "s_per_step": 1e-3, **r}]) == ""


def test_a_cpu_profile_counts_the_products_it_ran():
    a = torch.randn(8, 8)
    n, seconds = bt.kernel_times(lambda: [a @ a for _ in range(3)], "cpu")
    assert n == 3 and "aten::mm" in seconds and seconds["aten::mm"] > 0


def test_a_real_cpu_step_runs_its_products_each_step():
    """The one-student step of n = 8 runs about the kernels gpu_plan counts for it (49 and
    the data a chunk at a time): a step's count is a difference, not a whole run's."""
    run = bench_run(8)
    r = bt.busy_per_step(lambda k: st._train(run, k, None, "cpu"), "cpu", steps=20, warm=2)
    assert 30 < r["kernels_per_step"] < 80
    assert r["busy_s_per_step"] > 0
    assert {"aten::bmm", "aten::mm"} & {k for k, _ in r["busy_top"]}


def test_the_table_gives_the_share_of_the_step_the_kernels_take():
    e = {"label": "architectures-teacher/groups-8-11", "s_per_step": 1.344e-3,
         "busy_s_per_step": 0.336e-3, "kernels_per_step": 212.0,
         "busy_top": [["void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn" + "x" * 80,
                       1e-4]]}  # fmt: skip
    text = bt.format_busy([e, {"label": "bench/fast/E1-n28", "s_per_step": 1e-4}])
    assert "25%" in text and "212.0" in text and "1.344" in text
    assert "bench/fast/E1-n28" not in text  # no kernel time measured: no row
    assert max(len(line) for line in text.splitlines()) <= st.WIDTH


def test_step_times_passes_busy_to_its_measurements(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(st, "measure", lambda *a: seen.setdefault("args", a) and [])
    st.main(["--device", "cpu", "--only", "bench/fast/E1-n28", "--busy", "--out",
             str(tmp_path / "t.json")])  # fmt: skip
    assert seen["args"][-1] is True


def test_a_failure_while_profiling_keeps_the_step_time(monkeypatch, tmp_path):
    """The child writes the step before profiling it; the parent keeps a step whose profiling
    failed, with the error beside it."""
    monkeypatch.setattr(st, "seconds_per_step", lambda *a, **k: {"s_per_step": 1e-3})

    def broken(*a, **k):
        raise RuntimeError("CUPTI said no")

    monkeypatch.setattr(st, "busy_per_step", broken)
    one = tmp_path / "t.json.one"
    with pytest.raises(RuntimeError, match="CUPTI"):
        st._child("bench/fast/E1-n28", "cpu", 10, one, busy=True)
    written = json.loads(one.read_text())
    assert written["s_per_step"] == 1e-3 and written["label"] == "bench/fast/E1-n28"

    def child(cmd, timed=True, **kw):  # the child process: it timed the step, then failed
        assert "--busy" in cmd
        if timed:
            Path(cmd[cmd.index("--out") + 1]).write_text(json.dumps(written))
        return subprocess.CompletedProcess(cmd, 1, "", "Traceback\nRuntimeError: CUPTI said no")

    monkeypatch.setattr(st.subprocess, "run", child)
    [r] = st.measure(tmp_path / "t.json", "cpu", 60, only=["bench/fast/E1-n28"], busy=True)
    assert r["s_per_step"] == 1e-3 and "CUPTI said no" in r["busy_error"]
    monkeypatch.setattr(st.subprocess, "run", lambda cmd, **kw: child(cmd, timed=False))
    [r] = st.measure(tmp_path / "t.json", "cpu", 60, only=["bench/fast/E1-n28"], busy=True)
    assert "CUPTI said no" in r["error"] and "s_per_step" not in r  # nothing was timed
