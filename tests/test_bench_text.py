"""The chapter "Performance"'s text from a bench result dict (lab/bench_table.py), its size
curves (lab/bench_plots.py) and the recorded runs' costs (readings/performance.py)."""

import pytest

from gated_attention.readings import performance
from lab import bench, bench_plots, bench_table


def test_each_profile_says_what_it_benches_without_a_bench_file():
    assert "few steps" in bench_table.profile_note("smoke")
    assert bench_table.profile_note("quick").startswith("without _build/bench.json: the full")
    with pytest.raises(KeyError):
        bench_table.profile_note("huge")


def test_the_products_floor_against_the_step_and_the_target():
    r = {
        "engine_steps_per_s": 100.0,  # 10 ms
        "reference_steps_per_s": 20.0,  # 50 ms; 5x leaves 10 ms
        "products_floor_ms": 4.0,
        "targets": {"engine_speedup": 5},
        "engine_speedup_bound": 12.5,
        "products": [("[1, 2] x [2, 3]", 0.002, 1.0), ("[3] x [3]", 0.001, 3.0)],
    }
    header, first, second, alone, budget = bench_table.format_products_floor(r).splitlines()
    assert header.split()[-1] == "GFLOP/s"
    assert first.split()[-1] == "2.0" and second.split()[-1] == "0.3"  # GFLOP / ms * 1e3
    assert alone.startswith("products alone: 4.00 ms, 40% of the engine's step of 10.00 ms")
    assert alone.endswith("optimiser): 6.00 ms")
    assert budget == (
        "5x the reference (50.00 ms) leaves 10.00 ms per step: the products alone take 40% of "
        "it (reference / floor = 12.5x)"
    )
    assert bench_table.format_products_floor({}).startswith("Not measured: this bench file")


@pytest.mark.parametrize(
    "slowdown, verdict", [(1.5, "Flushing saved time here."), (1.1, "No slowdown from")]
)
def test_subnormals_say_whether_flushing_saved_time(slowdown, verdict):
    sub = {"members": 3, "n": 48, "T": 32, "entry": "e", "flushed_ms": 2.0}
    sub |= {"subnormal_ms": 2.0 * slowdown, "slowdown": slowdown}
    times, said = bench_table.format_subnormal(sub).splitlines()
    assert times.startswith("3 trained students (n = m = 48, T = 32, e): 2.00 ms flushed")
    assert times.endswith(f"with subnormals: {slowdown:.1f}x")
    assert said.startswith(verdict)
    assert bench_table.format_subnormal(None).startswith("Not measured: the quick")


def test_a_recorded_bench_reads_where_it_ran_and_its_targets():
    name, rec = next(iter(bench.recorded_benches().items()))
    text = bench_table.format_recorded_bench(name, rec)
    lines = text.splitlines()
    assert lines[0].startswith(f"recorded bench {name!r}: ")
    assert lines[0].endswith(f"commit {rec['provenance']['commit'][:7]}")
    assert bench_table.format_table(rec) in text
    assert len([x for x in lines if "against a target of" in x]) == len(rec["targets"])


def test_size_curves_label_this_machine_and_the_recorded_ones():
    here = {"size_curve": [[8, 100.0]], "step_profile": {"config": {"n": 100}, "eq2_floor_ms": 4}}
    recorded = {"gpu": {"size_curve": [[8, 900.0]]}, "old": {}}
    curves, floor = bench_plots.size_curves(here, recorded)
    assert curves == {"this machine": [[8, 100.0]], "gpu (recorded)": [[8, 900.0]]}
    assert floor == (100, 250.0)
    assert bench_plots.size_curves({}, recorded) == ({"gpu (recorded)": [[8, 900.0]]}, None)


def test_run_costs_leave_out_runs_that_train_nothing(monkeypatch):
    class Run:
        def __init__(self, train):
            self.config = type("Config", (), {"train": train} if train else {})()
            self.tensors = {"params": {"W": [0, 0, 0]}}  # 3 members
            self.metrics = {"resumed_from_step": 5}
            self.meta = {"wall_time_s": 7200.0, "hardware": {"cpu": "X", "device_name": None}}

    found = {"a": Run(type("Train", (), {"steps": 1000})()), "b": Run(None)}
    monkeypatch.setattr(performance, "recorded_names", lambda: ["a", "b"])
    monkeypatch.setattr(performance, "recorded", found.__getitem__)
    assert performance.cost_rows() == [
        {"recorded run": "a", "where": "X", "members": 3, "steps": "1,000", "hours": "2.00*"}
    ]


def test_the_ensembles_step_over_its_floor_data_included_and_not():
    r = {
        "batched_steps_per_s": 1000.0,  # 16 members: 16 ms a step
        "batched_compiled_steps_per_s": 1600.0,  # 10 ms
        "ensemble_profile": {"config": {"ensemble": 16}, "products_ms": {"a": 3.0, "b": 2.0}},
        "ways": [{"way": "engine", "ensemble_ms": 9.0}, {"way": "compiled", "ensemble_ms": 7.5}],
    }
    (_, whole), (_, bare) = bench_table.ensemble_floor_rows(r)
    assert whole == "3.20x fast, 2.00x compiled, data drawn (target <= 2x)"
    assert bare == "1.50x compiled (5.00 ms floor)"
    assert bench_table.ensemble_floor_rows({"ensemble_profile": None}) == []
    del r["ways"], r["batched_compiled_steps_per_s"]
    assert bench_table.ensemble_floor_rows(r) == [
        ("  step / its products floor", "3.20x fast, data drawn (target <= 2x)")
    ]


def test_the_engine_against_the_peak():
    r = {"engine_steps_per_s": 50.0, "step_gflop": 0.3, "gemm_peak_gflops": 100.0}
    assert bench_table.engine_against_peak(r) == (
        "engine: 20.0 ms per step, of which the matrix products alone would take 3.0 ms at "
        "the measured peak"
    )


def test_a_bench_that_measured_a_tf32_peak_shows_it_under_the_float32_peak():
    _, rec = next(iter(bench.recorded_benches().items()))
    assert "TF32" not in bench_table.format_table(rec)  # not measured: no row
    lines = bench_table.format_table({**rec, "gemm_peak_tf32_gflops": 123456.7}).splitlines()
    (i,) = [k for k, line in enumerate(lines) if "TF32" in line]
    assert lines[i].endswith("123456.7 GFLOP/s") and "engine / peak" in lines[i - 1]
