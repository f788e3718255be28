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


def test_load_or_run_prefers_the_file(smoke, tmp_path):
    results, out = smoke
    loaded, source = bench.load_or_run("quick", out)
    assert loaded == json.loads(out.read_text()) and "make bench" in source
    with pytest.raises(ValueError, match="unknown profile"):
        bench.load_or_run("fast", out)
