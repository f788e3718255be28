"""The measured step times (lab.step_times): what a measurement times, how the recorded ones
turn into a run's device time, and that a damaged record is refused."""

import json

import pytest

from gated_attention.experiments import recorded_runs
from lab import step_times as st
from lab.device_time import bench_run
from lab.gpu_plan import CENTRAL_CLAIMS


def test_a_step_is_the_difference_of_two_runs_over_the_steps(monkeypatch):
    """seconds_per_step trains warm, warm again, then warm + steps; the step is the last two's
    difference over steps (the clock faked: each call takes 1 s + 0.5 s a step, the first
    compiles for 5 s more)."""
    calls = []

    def fake(run, steps, mode, device):
        calls.append(steps)
        return 1.0 + 0.5 * steps + (5.0 if len(calls) == 1 else 0.0)

    monkeypatch.setattr(st, "_train", fake)
    r = st.seconds_per_step(bench_run(8), "cpu", steps=10, warm=4)
    assert calls == [4, 4, 14]
    assert r["s_per_step"] == pytest.approx(0.5)
    assert r["members"] == 1 and r["mode"] == "fast"
    with pytest.raises(ValueError, match="steps and warm"):
        st.seconds_per_step(bench_run(8), "cpu", steps=0)


def test_a_real_measurement_on_the_cpu_is_positive():
    r = st.seconds_per_step(bench_run(8), "cpu", steps=20, warm=2)
    assert r["s_per_step"] > 0 and r["second_s"] > r["warm_s"]


def test_measure_refuses_an_unknown_entry(tmp_path):
    with pytest.raises(ValueError, match="unknown entries"):
        st.measure(tmp_path / "t.json", "cpu", 10, only=["no/such-entry"])


def test_every_central_run_and_the_members_sweep_are_entries():
    labels = [e.label for e in st.entries()]
    assert labels[:2] == ["bench/fast/E1-n100", "bench/compiled/E1-n100"]
    assert "how-many-neurons-A/ensemble-0" in labels
    assert sum(lab.startswith("architectures-teacher/") for lab in labels) == 7
    for mode in ("fast", "compiled"):
        sweep = [e for e in st.entries() if e.label.startswith(f"bench/{mode}/E")]
        assert [e.mode for e in sweep if e.label.endswith("-n28")] == [mode] * 4


def _times(entries):
    return {"entries": entries, "provenance": {}}


def test_a_runs_device_time_is_its_jobs_steps_times_their_step():
    """Fig. 3A at the paper's 1,000,000 steps, its one job at 1 ms a step, compiling 9 s;
    Fig. 3B's jobs not measured are listed, not counted."""
    e = {"label": "how-many-neurons-A/ensemble-0", "s_per_step": 1e-3, "first_s": 10.0}
    runs = st.measured_runs(_times([{**e, "warm_s": 1.0}]), ("how-many-neurons-A",
                            "how-many-neurons-B"))  # fmt: skip
    a, b = runs
    assert (a["jobs"], a["measured"], a["steps"]) == (1, 1, 1_000_000)
    assert a["stepping_s"] == pytest.approx(1000.0) and a["compile_s"] == pytest.approx(9.0)
    assert b["measured"] == 0 and b["stepping_s"] == 0 and len(b["missing"]) == b["jobs"] == 3
    text = st.format_measured(runs, {"how-many-neurons-A": {"device_s": 509.0, "compile_s": 9.0}})
    assert "2.00" in text  # 1000 s of steps measured over 500 s predicted (compiling apart)
    assert "compiling, measured there: 0.1 min" in text
    pred = {"how-many-neurons-A": {"device_s": 509.0, "compile_s": 9.0, "arithmetic_s": 250.0}}
    text = st.format_measured(runs, pred)
    words = " ".join(text.split())
    assert "took 2.00x to 2.00x their predicted stepping, 4.0x to 4.0x their arithmetic" in words
    assert max(len(line) for line in text.splitlines()) <= st.WIDTH
    assert "how-many-neurons-B: not measured" in text


def test_the_central_claims_are_cut_into_calls_by_the_measured_steps():
    """Fig. 3A measured whole at 2x its predicted stepping: the ratio 2; Fig. 3B not timed, so
    its predicted stepping x 2 plus its predicted compiling; every run of the claims in the
    parts, each part at most one call."""
    e = {"label": "how-many-neurons-A/ensemble-0", "s_per_step": 1e-3, "first_s": 10.0}
    times = _times([{**e, "warm_s": 1.0}])
    runs = {name: {"device_s": 100.0, "compile_s": 10.0, "jobs": 1, "floor_s": 1.0}
            for name in CENTRAL_CLAIMS}  # fmt: skip
    runs["how-many-neurons-A"] = {"device_s": 509.0, "compile_s": 9.0, "jobs": 1, "floor_s": 1.0}
    runs["how-many-neurons-B"] = {"device_s": 130.0, "compile_s": 30.0, "jobs": 3, "floor_s": 1.0}
    mp = st.measured_parts({**times, "predicted": {"runs": runs}})
    got = {r["name"]: r for r in mp["runs"]}
    assert mp["ratio"] == pytest.approx(2.0)
    assert got["how-many-neurons-A"]["device_s"] == pytest.approx(1009.0)  # 1000 s + 9 s
    assert got["how-many-neurons-B"]["device_s"] == pytest.approx(100.0 * 2 + 30.0)
    assert [r["name"] for r in mp["runs"]] == list(CENTRAL_CLAIMS)
    text = st.format_parts(mp)
    words = " ".join(text.split())
    assert "1 of 8 jobs timed" in words and "stepping x 2.00" in words
    assert "parts of at most 9 min" in words
    assert max(len(line) for line in text.splitlines()) <= st.WIDTH


def test_the_shipped_record_reads_and_a_damaged_one_is_refused(tmp_path, monkeypatch):
    shipped = st.recorded_step_times()
    assert "h200" in shipped and "commit" in shipped["h200"]["provenance"]
    assert set(shipped["h200"]["predicted"]["runs"]) == set(CENTRAL_CLAIMS)
    assert st.format_members(shipped["h200"]).count("\n") >= 6
    (tmp_path / "step-times-x.json").write_text(json.dumps(_times([{"label": "a"}])))
    monkeypatch.setattr(recorded_runs, "RECORDED_ROOT", tmp_path)
    with pytest.raises(ValueError, match="step-times-x.json lack entry 0"):
        st.recorded_step_times()
    (tmp_path / "step-times-x.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        st.recorded_step_times()


def test_show_prints_the_recorded_times_beside_their_prediction(capsys):
    assert st.main(["--show"]) == 0
    out = capsys.readouterr().out
    assert "measured on the recorded h200" in out and "member-steps/s" in out
    assert "measured whole" in out
    assert max(len(line) for line in out.splitlines()) <= st.WIDTH


def test_the_missing_entries_are_those_the_record_lacks(tmp_path, monkeypatch):
    """The shipped H200 record lacks Fig. 4B's five other families and mode compiled at 1 to
    64 members; a GPU without a record lacks every entry."""
    missing = st.not_measured("h200")
    assert "architectures-regression/groups-4-7" in missing
    assert "bench/compiled/E64-n28" in missing
    assert "how-many-neurons-A/ensemble-0" not in missing and "bench/fast/E1-n28" not in missing
    assert len(missing) == 5 + 4
    assert st.not_measured("no-such-gpu") == [e.label for e in st.entries()]
