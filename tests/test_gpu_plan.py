"""The plan of the paper-profile runs not yet recorded (gated_attention/tools/gpu_plan.py): which
runs, their predicted device time from each job's counted kernels and FLOPs on the recorded
GPU bench, the central claims at the paper's steps in parts, and the command that trains and
records them all (tested end to end on the CPU in the smoke profile)."""

from __future__ import annotations

import pytest

from gated_attention.experiments import recorded_runs
from lab import gpu_plan, plan_text
from lab.bench import recorded_benches


def test_the_missing_runs_are_those_without_a_recorded_paper_run():
    missing = gpu_plan.missing_runs("paper")
    for recorded in ("teacher-identification", "in-context-regression"):
        assert recorded not in missing  # -paper-gpu, -paper-cpu
    assert "optimiser-comparison-members" not in missing  # -paper
    assert {"how-many-neurons-A", "how-many-neurons-B", "associative-recall"} <= set(missing)


def test_the_prediction_is_each_jobs_counted_step_at_the_calibrated_gpu():
    p = gpu_plan.plan("smoke", names=["how-many-neurons-A", "teacher-identification-chosen"])
    cal = p["calibration"]
    bench = recorded_benches()["h200"]
    assert cal["t_kernel"] * cal["kernels"] == pytest.approx(1 / bench["engine_steps_per_s"])
    assert cal["peak_flops"] == pytest.approx(bench["gemm_peak_gflops"] * 1e9)
    a, chosen = p["runs"]
    config = gpu_plan.plan_config("how-many-neurons-A", "smoke")
    assert (a["jobs"], a["members"], a["steps"]) == (1, len(config.members()), config.train.steps)
    launch = a["kernels"] * cal["t_kernel"]
    arithmetic = a["gflop"] * 1e9 / cal["peak_flops"]
    stepping = a["steps"] * max(launch, arithmetic)
    assert a["device_s"] == pytest.approx(stepping + a["compile_s"]) and a["compile_s"] < 1
    assert chosen["gated_only"] and 50 < chosen["kernels"] < 70  # the fused step: 56, flat
    assert p["total_s"] == pytest.approx(a["device_s"] + chosen["device_s"])
    assert a["arithmetic_s"] == pytest.approx(a["steps"] * arithmetic)  # one job: its FLOPs
    assert p["arithmetic_s"] == pytest.approx(a["arithmetic_s"] + chosen["arithmetic_s"])
    assert p["arithmetic_s"] < p["total_s"]
    assert p["fused_s"] == pytest.approx(a["device_fused_s"] + chosen["device_fused_s"])
    assert a["device_fused_s"] <= a["device_s"] and chosen["device_fused_s"] == chosen["device_s"]
    assert a["launch_s"] == pytest.approx(a["steps"] * launch)  # one job: its kernels
    for key in ("launch_s", "launch_fused_s", "compile_s"):
        assert p[key] == pytest.approx(a[key] + chosen[key])
    assert p["launch_fused_s"] <= p["launch_s"] and p["launch_s"] + p["compile_s"] <= p["total_s"]
    table = gpu_plan.format_plan(p)
    assert "how-many-neurons-A" in table and "total" in table
    assert all(len(line) <= 100 for line in table.splitlines())


def test_the_central_claims_at_the_papers_steps_and_in_parts():
    p = gpu_plan.plan("smoke", names=["architectures-teacher"], at_paper_steps=True)
    (r,) = p["runs"]
    assert r["steps"] == r["jobs"] * gpu_plan.paper_steps()["architectures-teacher"]
    assert gpu_plan.paper_steps() == {
        "architectures-teacher": 1_000_000,
        "architectures-regression": 300_000,
    }
    assert "TF32" in gpu_plan.format_plan(p) and "not known" in plan_text.tf32_floor_line(p)
    plan3 = {"runs": [{"name": n, "device_s": s} for n, s in (("a", 300), ("b", 700), ("c", 100))]}
    assert gpu_plan.parts(plan3, 540) == [
        [("a", 300), ("b", 240)],
        [("b", 460), ("c", 80)],
        [("c", 20)],
    ]
    assert gpu_plan.parts(plan3, 540)[0] != gpu_plan.parts(plan3, 541)[0]  # the limit is used
    assert gpu_plan.CENTRAL_CLAIMS[:2] == ("how-many-neurons-A", "how-many-neurons-B")


def test_the_plan_counts_a_families_search_and_a_recall_ablation():
    p = gpu_plan.plan("smoke", names=["fig4b-setup", "associative-recall"])
    setup, recall = p["runs"]
    config = gpu_plan.plan_config("fig4b-setup", "smoke")
    assert setup["steps"] == len(config.families) * config.train.steps * (len(config.lr_grid) + 1)
    assert not setup["gated_only"]
    rc = gpu_plan.plan_config("associative-recall", "smoke")
    assert recall["steps"] == 2 * rc.train.steps + rc.ce_train.steps


def test_the_command_trains_and_records_every_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GATED_ATTENTION_DEVICE", raising=False)
    monkeypatch.setattr(recorded_runs, "RECORDED_ROOT", tmp_path / "recorded")
    names = ["capped-memory-T8-lam1", "teacher-identification-chosen"]
    counts = ["--counts", str(tmp_path / "counts.json")]
    assert gpu_plan.main(["--profile", "smoke", "--only", *names, "--run", *counts]) == 0
    recorded = sorted(p.name for p in (tmp_path / "recorded").iterdir())
    assert recorded == sorted(f"{n}-smoke-gpu" for n in names)
    assert gpu_plan.run_plan("smoke", names) == []  # recorded already: nothing trains again


def test_the_plan_covers_every_registered_experiment():
    """Every experiment of the registry can be planned (a new config shape needs the plan to
    know its steps), and a set of pilots counts each pilot's own steps."""
    from gated_attention.experiments.registry import EXPERIMENTS

    p = gpu_plan.plan("smoke", names=list(EXPERIMENTS))
    assert [r["name"] for r in p["runs"]] == list(EXPERIMENTS)
    assert all(r["kernels"] > 0 and r["device_s"] > 0 for r in p["runs"])  # each job counted
    pilots = next(r for r in p["runs"] if r["name"] == "fig4b-setup-pilots")
    config = gpu_plan.plan_config("fig4b-setup-pilots", "smoke")
    assert pilots["steps"] == sum(q.train.steps for q in config.pilots)


def test_a_compiled_run_is_predicted_as_a_range_of_launches():
    p = gpu_plan.plan("smoke", names=["how-many-neurons-A"], mode="compiled")
    (r,) = p["runs"]
    assert r["device_fused_s"] < r["device_s"]  # each generated kernel one launch: fewer
    assert r["launch_fused_s"] < r["launch_s"] and p["launch_fused_s"] == r["launch_fused_s"]
    assert p["fused_s"] == pytest.approx(r["device_fused_s"])
    assert p["fused_s"] < p["total_s"]
    assert f"{p['fused_s'] / 60:.1f} min" in gpu_plan.format_plan(p)


def test_the_floor_with_tf32_products_is_the_floor_at_the_tf32_peak():
    p = {"floor_s": 600.0, "calibration": {"peak_flops": 40e12, "peak_tf32_flops": 160e12}}
    line = plan_text.tf32_floor_line(p)
    assert "160.0 TFLOP/s" in line and "2.5 min" in line and "keeps float32" in line
    assert all(len(part) <= 100 for part in line.splitlines())
    assert "not known" in plan_text.tf32_floor_line({**p, "calibration": {"peak_flops": 1.0}})


def test_the_kernels_alone_are_what_the_total_keeps_at_any_matmul_speed():
    p = {"launch_s": 600.0, "launch_fused_s": 300.0, "compile_s": 60.0}
    line = plan_text.kernels_line(p)
    assert "would be 11.0 min\n(6.0 min, each generated kernel one launch)" in line
    assert all(len(part) <= 100 for part in line.splitlines())
    assert plan_text.kernels_line({}) == ""  # a plan from before the kernels were summed
