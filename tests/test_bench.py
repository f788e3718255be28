"""``make bench``: the FLOP count, the JSON it writes, and the chapter's loader."""

import json

import pytest

from gated_attention import bench

REQUIRED = (
    "engine_steps_per_s",
    "reference_steps_per_s",
    "gemm_peak_gflops",
    "engine_gflops",
    "batched_steps_per_s",
    "sequential_steps_per_s",
    "hardware",
    "torch_version",
    "threads",
)


def test_step_flops_by_hand():
    # d 4, n = m = 100, T 32, B 64: R = 2048 rows
    f = bench.step_flops(4, 100, 100, 32, 64)
    assert f["parts"] == {
        "input_gating": 2 * 200 * 5 * 2048,
        "scan": 2 * 100 * 32 * 32 * 64,
        "output_gating": 2 * 200 * 100 * 2048,
        "readout": 2 * 4 * 100 * 2048,
    }
    assert f["forward"] == 100_761_600
    assert f["backward"] == 2 * f["forward"] - 2 * 200 * 5 * 2048
    assert f["total"] == f["forward"] + f["backward"]
    assert bench.step_flops(4, 100, 100, 32, 64, d_out=2)["parts"]["readout"] == 2 * 2 * 100 * 2048


def test_gemm_peak_is_positive():
    assert bench.gemm_peak_gflops(size=64, repeats=2) > 0


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    results = bench.main(["--profile", "smoke", "--out", str(out)])
    return results, out


def test_main_writes_the_required_keys(smoke):
    results, out = smoke
    stored = json.loads(out.read_text())
    for key in REQUIRED:
        assert key in stored, key
    assert stored["profile"] == "smoke"
    for key in REQUIRED[:6]:
        assert stored[key] > 0
    assert stored["engine_speedup"] == pytest.approx(
        stored["engine_steps_per_s"] / stored["reference_steps_per_s"]
    )
    assert set(stored["targets_met"]) == {"engine_speedup", "ensemble_speedup"}
    table = bench.format_table(results)
    assert "steps/s" in table and "GFLOP/s" in table
    # the paper's main run at the engine's rate, and where the bench ran
    assert stored["paper_run_hours"] == pytest.approx(
        bench.PAPER_STEPS / stored["engine_steps_per_s"] / 3600
    )
    assert f"{stored['paper_run_hours']:.1f} h" in table
    assert stored["device"] == "cpu" and stored["device_max_abs_diff"] is None
    assert stored["hardware"]["device"] == "cpu"


def test_device_agreement_and_its_rows():
    # the same device: the same numbers, exactly
    assert bench.device_agreement("cpu", steps=3) == 0.0
    with pytest.raises(ValueError, match="device"):
        bench.device_agreement("no-such-device", steps=1)
    # off the CPU the table names the device and its difference to the CPU
    rows = dict(bench._device_rows({"device": "cuda:0", "device_max_abs_diff": 3e-15}))
    assert rows["device"] == "cuda:0"
    assert rows["  largest weight difference to the CPU"].startswith("3.0e-15")
    assert dict(bench._device_rows({})) == {"device": "cpu"}  # a bench file of before
    assert "CPU measurement" in bench._subnormal_rows(None, "cuda:0")[0][1]


def test_load_or_run_prefers_the_file(smoke, tmp_path):
    results, out = smoke
    loaded, source = bench.load_or_run("quick", out)
    assert loaded == json.loads(out.read_text()) and "make bench" in source
    with pytest.raises(ValueError, match="unknown profile"):
        bench.load_or_run("fast", out)


def test_subnormal_cost_reads_the_cached_run(tmp_path, monkeypatch):
    """Skipped (None, and said so in the table) without the cached run; measured with it."""
    from gated_attention import experiments
    from gated_attention.analysis import configs

    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    assert bench.subnormal_cost(repeats=1) is None
    assert "not measured" in "\n".join(a + b for a, b in bench._subnormal_rows(None))
    smoke = configs.teacher_identification_config("smoke")
    monkeypatch.setattr(configs, "teacher_identification_config", lambda profile: smoke)
    experiments.run(smoke, progress=False)
    sub = bench.subnormal_cost(repeats=1)
    assert sub["entry"] == experiments.entry_path(smoke).name
    assert sub["members"] == len(smoke.seeds) and sub["threads"] == 1
    assert sub["flushed_ms"] > 0 and sub["subnormal_ms"] > 0
    assert sub["slowdown"] == pytest.approx(sub["subnormal_ms"] / sub["flushed_ms"])
    # the package's setting is back on afterwards
    import torch

    assert float(torch.tensor([1e-39]).mul(1.0)[0]) == 0.0
