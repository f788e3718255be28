"""Jobs side by side, measured (gated_attention/tools/bench_overlap.py), and how the GPU
prediction uses the speedup a recorded bench measured (gpu_plan.with_side_by_side)."""

from __future__ import annotations

import time

import pytest
import torch

from lab import bench_overlap, gpu_plan


def _sleepers(k: int, seconds: float = 0.2) -> list:
    """k jobs that each wait ``seconds`` (long against a loaded machine's thread start-up)."""
    return [lambda: time.sleep(seconds) for _ in range(k)]


def test_jobs_that_overlap_give_k_and_jobs_one_after_another_give_one():
    cpu = torch.device("cpu")
    together = bench_overlap.speedup(_sleepers(4), (1, 2, 4), cpu, threads=True)
    assert together[1] == 1.0 and together[2] > 1.6 and together[4] > 3.0
    apart = bench_overlap.speedup(_sleepers(4), (1, 4), cpu, threads=False)
    assert apart[4] < 1.3
    with pytest.raises(ValueError, match="start at 1"):
        bench_overlap.speedup(_sleepers(2), (2,), cpu, threads=True)


def test_a_family_job_trains_side_by_side_here():
    out = bench_overlap.side_by_side_speedup("lstm", (1, 2), steps=2)
    assert set(out) == {1, 2} and out[2] > 0


def _run(jobs: int, gated: bool, device_s: float = 100.0, arithmetic_s: float = 10.0) -> dict:
    return {
        "name": "r", "jobs": jobs, "gated_only": gated, "device_s": device_s,
        "arithmetic_s": arithmetic_s, "compile_s": 0.0,
    }  # fmt: skip


def test_the_prediction_divides_by_the_measured_speedup_of_the_runs_path():
    measured = {"gated": {"1": 1.0, "4": 3.0, "16": 8.0}, "lstm": {"1": 1.0, "4": 2.0}}
    r = gpu_plan.with_side_by_side(_run(28, True), measured, 16)
    assert r["device_s"] == pytest.approx(100 / 8) and r["speedup"] == pytest.approx(8)
    r = gpu_plan.with_side_by_side(_run(28, False), measured, 16)  # the family's measurement
    assert r["device_s"] == pytest.approx(50)
    r = gpu_plan.with_side_by_side(_run(3, True), measured, 16)  # 3 jobs: at most 3 at once
    assert r["device_s"] == pytest.approx(100)
    r = gpu_plan.with_side_by_side(_run(28, True, arithmetic_s=40), measured, 16)
    assert r["device_s"] == pytest.approx(40)  # never under the arithmetic
    assert gpu_plan.with_side_by_side(_run(28, True), None, 16)["device_s"] == 100
    assert gpu_plan.with_side_by_side(_run(28, True), measured, 1)["device_s"] == 100
    compiling = {**_run(28, True, device_s=180), "compile_s": 80.0}  # not divided
    assert gpu_plan.with_side_by_side(compiling, measured, 16)["device_s"] == pytest.approx(92.5)


def test_the_bench_prints_the_speedups_and_says_where_it_measures_none():
    from lab.bench_table import format_overlap

    assert "GPU only" in format_overlap(None)
    table = format_overlap({"gated": {"1": 1.0, "4": 3.5}, "lstm": {"1": 1.0, "4": 1.1}})
    assert "K = 4: 3.50x" in table and "lstm" in table.splitlines()[2]
