"""``make bench``: FLOP count, family costs, the JSON it writes, and the chapter's loader."""

import dataclasses
import json

import pytest
import torch

from gated_attention.models.family_registry import FAMILIES
from lab import bench, bench_products, bench_table, bench_timing, device_time, family_bench
from lab.bench_table import format_ways

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


def test_step_flops_is_what_the_engine_multiplies():
    """step_flops (by hand) == the FLOPs torch counts in one engine step == the recorded
    products of step_products, which are the engine's eleven products (4 forward, 7 backward)."""
    from torch.utils.flop_counter import FlopCounterMode

    from gated_attention.engine import stack_students
    from gated_attention.models.fast_path import fused_loss, inputs_neuron_major, pack_params
    from gated_attention.models.gated_rnn import GatedRNN

    d, n, m, T, B = 3, 7, 5, 6, 4
    params, _ = stack_students([GatedRNN(d, n, m, seed=0)])
    P = {k: v.float().requires_grad_(True) for k, v in pack_params(params).items()}
    X = inputs_neuron_major(torch.randn(1, B, T, d))
    with FlopCounterMode(display=False) as counter:
        fused_loss(X, P, torch.randn(1, d, T * B), T, None).sum().backward()
    total = bench.step_flops(d, n, m, T, B)["total"]
    assert counter.get_total_flops() == total
    calls = bench.step_products(d, n, m, T, B)
    assert len(calls) == 11
    assert sum(bench_products.product_flops(spec) for _, spec, _ in calls) == total


def test_products_floor_times_each_product():
    floor = bench.products_floor(3, 7, 5, 6, 4, repeats=1)
    assert len(floor["products"]) == 11
    assert all(ms > 0 for _, _, ms in floor["products"])
    assert floor["ms"] == pytest.approx(sum(ms for _, _, ms in floor["products"]))
    assert floor["gflop"] * 1e9 == pytest.approx(bench.step_flops(3, 7, 5, 6, 4)["total"])


def test_fastest_takes_turns_and_keeps_the_minimum():
    calls = []
    times = {"a": iter([3.0, 1.0, 2.0]), "b": iter([5.0, 6.0, 4.0])}

    def timer(name):
        def timed():
            calls.append(name)
            return next(times[name])

        return timed

    best = bench_timing.fastest({"a": timer("a"), "b": timer("b")}, repeats=3)
    assert best == {"a": 1.0, "b": 4.0}
    assert calls == ["a", "b"] * 3


def test_the_ways_take_turns(monkeypatch):
    """Every (way, config) is built and run once, then the timed runs go round all of them
    (``fastest``), instead of each row's runs one after another."""
    from lab import bench_ways

    calls = []
    monkeypatch.setattr(bench_ways, "_setup", lambda E, n, d, T, B, seed: (E, None, None))
    monkeypatch.setattr(bench_ways, "_step", lambda way, E, X, Y, T: lambda: calls.append((way, E)))
    monkeypatch.setattr(bench_ways, "_data_timers", lambda *a: (lambda: None, lambda: None, 1))
    rows = bench_ways.ways_to_floor("quick")
    keys = [(w, E) for w, _ in bench_ways.WAYS for E in (1, 16)]
    assert calls[: len(keys)] == keys  # built (and compiled) once each, untimed
    timed, reps = calls[len(keys) :], 50
    assert len(timed) == 5 * len(keys) * reps
    assert [timed[i * reps] for i in range(len(keys))] == keys  # round 1 visits every row
    assert all(r["one_ms"] > 0 and r["ensemble_ms"] > 0 for r in rows if r["way"] in dict(keys))


def test_gemm_peak_is_positive():
    assert bench.gemm_peak_gflops(size=64, repeats=2) > 0


def test_a_tf32_peak_is_a_cuda_devices_and_the_mode_is_off_again_after():
    with pytest.raises(ValueError, match="TF32 products are a CUDA device's mode"):
        bench.gemm_peak_gflops(size=64, repeats=2, tf32=True)
    assert torch.backends.cuda.matmul.allow_tf32 is False


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
    # the products-only floor and the bound it puts on the engine's speed-up
    assert stored["products_floor_ms"] > 0 and len(stored["products"]) == 11
    assert stored["engine_speedup_bound"] == pytest.approx(
        1e3 / stored["reference_steps_per_s"] / stored["products_floor_ms"]
    )
    assert f"{stored['engine_speedup_bound']:.1f}x" in table
    assert stored["device"] == "cpu" and stored["device_max_abs_diff"] is None
    assert stored["hardware"]["device"] == "cpu"
    # the kernels of the step timed, what a GPU bench's time is shared out over
    run = device_time.bench_run(100)
    assert stored["step_kernels"] == device_time.step_kernels(run)["step_kernels"]


def test_device_agreement_and_its_rows():
    # the same device: the same numbers, exactly
    assert bench.device_agreement("cpu", steps=3) == 0.0
    with pytest.raises(ValueError, match="device"):
        bench.device_agreement("no-such-device", steps=1)
    # off the CPU the table names the device and its difference to the CPU
    rows = dict(bench_table._device_rows({"device": "cuda:0", "device_max_abs_diff": 3e-15}))
    assert rows["device"] == "cuda:0"
    assert rows["  largest weight difference to the CPU"].startswith("3.0e-15")
    assert dict(bench_table._device_rows({})) == {"device": "cpu"}  # a bench file of before
    assert "CPU measurement" in bench_table._subnormal_rows(None, "cuda:0")[0][1]


def test_load_or_run_prefers_the_file(smoke, tmp_path):
    results, out = smoke
    loaded, source = bench.load_or_run("quick", out)
    assert loaded == json.loads(out.read_text()) and "make bench" in source
    with pytest.raises(ValueError, match="unknown profile"):
        bench.load_or_run("fast", out)


def test_every_family_is_timed_at_the_matched_count(smoke):
    """The bench's "families": every family, a positive time, a parameter count near the target."""
    results, out = smoke
    fam = json.loads(out.read_text())["families"]
    target = family_bench.FAMILY_SETUP["target_params"]
    assert fam["config"]["target_params"] == target and fam["config"]["steps"] >= 1
    assert list(fam["costs"]) == list(FAMILIES)
    for name, r in fam["costs"].items():
        assert r["ms_per_step"] > 0, name
        assert abs(r["params"] - target) <= 0.15 * target, (name, r["params"])
        assert r["member_steps_per_s"] == pytest.approx(
            fam["config"]["ensemble"] * 1e3 / r["ms_per_step"]
        )
        assert r["label"] == FAMILIES[name].label and r["width"] >= 1


def test_the_family_table_has_a_row_per_family(smoke):
    results, _ = smoke
    lines = bench.format_families(results["families"]).splitlines()
    assert len(lines) == 2 + len(FAMILIES)  # the setting, the column names, one row each
    assert "ms/step" in lines[1] and "member-steps/s" in lines[1]
    for line, (name, r) in zip(lines[2:], results["families"]["costs"].items(), strict=True):
        assert line.startswith(f"{name} ({r['label']})")
        assert f"{r['ms_per_step']:.2f}" in line and f"{r['params']:,}" in line
    assert lines[2].endswith("1.0x")  # the gated RNN against itself
    assert "not measured" in bench.format_families(None)


def test_the_gated_family_trains_through_the_fused_path(monkeypatch):
    """forward=None for "gated": its Family.forward is never called; an unknown name is named."""

    def refuse(x, p):
        raise AssertionError("the gated family must train through the engine's fused path")

    monkeypatch.setitem(FAMILIES, "gated", dataclasses.replace(FAMILIES["gated"], forward=refuse))
    costs = family_bench.family_costs("smoke", names=("gated",))["costs"]
    assert list(costs) == ["gated"] and costs["gated"]["ms_per_step"] > 0
    with pytest.raises(ValueError, match="unknown family 'rnn'"):
        family_bench.family_costs("smoke", names=("rnn",))


def test_compiled_cell_loops_are_timed_through_their_own_forward(monkeypatch):
    """With compiled=True a family with a compiled loop gets its own row, trained through
    Family.compiled (here a stand-in that counts its calls: nothing is compiled)."""
    calls = []

    def counted(x, p):
        calls.append(x.shape)
        return FAMILIES["lstm"].forward(x, p)

    monkeypatch.setitem(FAMILIES, "lstm", dataclasses.replace(FAMILIES["lstm"], compiled=counted))
    costs = family_bench.family_costs("smoke", names=("lstm", "dense"), compiled=True)["costs"]
    assert list(costs) == ["lstm", "lstm-compiled", "dense"]  # the dense RNN has no such form
    assert costs["lstm-compiled"]["label"] == "LSTM, compiled form" and calls
    assert costs["lstm-compiled"]["width"] == costs["lstm"]["width"]
    n = len(calls)
    family_bench.family_costs("smoke", names=("lstm",))  # compiled=False: never through it
    assert len(calls) == n


def test_an_older_bench_file_gets_the_family_costs(smoke, tmp_path):
    """A bench.json from before the family costs: measured now, and the source says so."""
    results, out = smoke
    old = {k: v for k, v in json.loads(out.read_text()).items() if k != "families"}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(old))
    loaded, source = bench.load_or_run("smoke", path)
    assert "family costs measured now" in source and "make bench" in source
    assert list(loaded["families"]["costs"]) == list(FAMILIES)
    assert loaded["families"]["threads"] == 1
    assert {k: v for k, v in loaded.items() if k != "families"} == old


def test_subnormal_cost_reads_the_cached_run(tmp_path, monkeypatch):
    """Skipped (None, and said so in the table) without the cached run; measured with it."""
    from gated_attention import experiments
    from gated_attention import experiments as configs

    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    assert bench.subnormal_cost(repeats=1) is None
    assert "not measured" in "\n".join(a + b for a, b in bench_table._subnormal_rows(None))
    smoke = configs.teacher_identification_config("smoke")
    monkeypatch.setattr(configs, "teacher_identification_config", lambda profile: smoke)
    experiments.run(smoke, progress=False)
    sub = bench.subnormal_cost(repeats=1)
    assert sub["entry"] == experiments.entry_path(smoke).name
    assert sub["members"] == len(smoke.seeds) and sub["threads"] == 1
    assert sub["flushed_ms"] > 0 and sub["subnormal_ms"] > 0
    assert sub["slowdown"] == pytest.approx(sub["subnormal_ms"] / sub["flushed_ms"])
    # the package's setting is back on afterwards

    assert float(torch.tensor([1e-39]).mul(1.0)[0]) == 0.0


def test_recorded_benches_load_and_render():
    """The GPU bench shipped with the package: its own ratios, its provenance, the table."""
    recs = bench.recorded_benches()
    assert "h200" in recs
    r = recs["h200"]
    assert r["device"] == "cuda" and r["hardware"]["device_name"] == "NVIDIA H200"
    assert r["device_max_abs_diff"] < 1e-12  # float64 on the GPU = on the CPU
    assert r["engine_speedup"] == pytest.approx(
        r["engine_steps_per_s"] / r["reference_steps_per_s"]
    )
    assert len(r["provenance"]["commit"]) == 40
    assert "engine / reference" in bench.format_table(r)


def test_a_damaged_recorded_bench_is_named(tmp_path, monkeypatch):
    from gated_attention.experiments import recorded_runs

    monkeypatch.setattr(recorded_runs, "RECORDED_ROOT", tmp_path)
    (tmp_path / "bench-x.json").write_text("{not json")
    with pytest.raises(ValueError, match="bench-x.json is not valid JSON"):
        bench.recorded_benches()
    (tmp_path / "bench-x.json").write_text('{"engine_speedup": 2.0}')
    with pytest.raises(ValueError, match="lacks ensemble_speedup, provenance"):
        bench.recorded_benches()


def test_every_product_of_the_step_is_a_part_of_eq2():
    """Each of the step's products is classified as one part of Eq. (2), all four occur, and
    the floor every implementation must pay is output gating + readout."""
    from lab.step_profile import product_part

    d, n, T, B = 4, 20, 6, 8
    parts = [
        product_part(shapes, d, n, n, T, d)
        for shapes, _, _ in bench_products.products_floor(d, n, n, T, B, repeats=1)["products"]
    ]
    assert sorted(set(parts)) == ["input gating", "output gating", "readout", "scan"]
    assert parts.count("output gating") == 3 and parts.count("readout") == 3


def test_the_step_profile_and_size_curve_are_stored(smoke):
    results, out = smoke
    p = json.loads(out.read_text())["step_profile"]
    assert 0 < p["eq2_floor_ms"] <= sum(p["products_ms"].values())
    assert p["step_ms"] > 0 and p["loss_ms"] > 0 and p["data_ms"] > 0
    assert "Eq. (2) floor" in bench_table.format_profile(p)
    curve = json.loads(out.read_text())["size_curve"]
    assert [n for n, _ in curve] == [8, 16] and all(r > 0 for _, r in curve)


def test_side_by_side_table():
    cpu = {"engine_steps_per_s": 231.0, "engine_speedup": 1.7, "paper_run_hours": 1.2}
    gpu = {"engine_steps_per_s": 2400.0}
    table = bench_table.format_side_by_side({"this CPU": cpu, "H200": gpu})
    first, *rows = table.splitlines()
    assert "this CPU" in first and "H200" in first
    engine = next(r for r in rows if r.startswith("engine, Sec. 4.1"))
    assert "231" in engine and "2400" in engine
    assert next(r for r in rows if r.startswith("engine / reference")).rstrip().endswith("-")


def test_the_ways_to_the_floor_are_rows_beside_the_engine(smoke):
    results, out = smoke
    stored = json.loads(out.read_text())
    ways = {w["way"]: w for w in stored["ways"]}
    assert list(ways)[:9] == [
        "engine", "compiled", "whole", "compile", "autograd", "foreach", "flat", "quadratic",
        "inplace",
    ]  # fmt: skip
    for way in ("engine", "compiled", "whole", "autograd", "foreach", "flat", "quadratic",
                "inplace"):  # fmt: skip
        assert ways[way]["error"] is None and ways[way]["one_ms"] > 0
    assert ways["data-0"]["ensemble_ms"] > 0 and ways["data-1"]["ensemble_ms"] > 0
    table = format_ways(stored["ways"], stored["kernels"])
    assert "(a) torch.compile" in table and "(d) a step's data" in table
    assert [r["members"] for r in stored["kernels"]] == [1, 2] and "mode fast" in table
    assert all(len(line) <= 100 for line in table.splitlines())


def test_the_ways_time_the_engines_own_step_objects(monkeypatch):
    """Each row's step is one of ``engine.steps``' objects (no copy of the step in the bench):
    a step object that records its calls sees the engine's row, the compiled row and the
    autograd row each call it."""
    from gated_attention.engine import steps
    from lab import bench_ways

    calls = []
    for cls in (steps.FusedStep, steps.CompiledStep, steps.ForwardStep):
        original = cls.__call__
        monkeypatch.setattr(
            cls,
            "__call__",
            lambda self, *a, _o=original, **k: (calls.append(type(self)), _o(self, *a, **k)),
        )
    params, X, Y = bench_ways._setup(1, 4, 3, 5, 2, seed=0)
    for way, cls in (
        ("engine", steps.FusedStep),
        ("compiled", steps.CompiledStep),
        ("whole", steps.CompiledStep),
        ("autograd", steps.ForwardStep),
    ):
        calls.clear()
        bench_ways._step(way, params, X, Y, 5)()
        assert calls == [cls], way


def test_a_steps_kernels_are_flat_in_members_in_both_modes_but_for_its_data():
    """The kernels a step launches (``device_time.kernels_by_members``) do not grow with the
    members, in mode fast (one batched product per factor) and mode compiled (a few generated
    loop nests and the GEMMs; one member's, its size-1 dimensions specialised, one fewer);
    drawing the data does: each member draws its own."""
    from lab.device_time import kernels_by_members

    rows = {(r["members"], r["mode"]): r for r in kernels_by_members((1, 3), n=4)}
    two = kernels_by_members((2,), n=4, modes=("compiled",))[0]
    assert rows[1, "fast"]["step"] == rows[3, "fast"]["step"] > 40
    assert two["step"] == rows[3, "compiled"]["step"] <= 30
    assert rows[1, "compiled"]["step"] > 12  # the generated kernels' nests counted, not only
    # the few GEMMs: the count reads the Python wrapper's code (``steps._options``)
    assert rows[3, "compiled"]["step"] - 1 <= rows[1, "compiled"]["step"] <= two["step"]
    assert rows[3, "fast"]["data"] > rows[1, "fast"]["data"] > 0
    table = format_ways([{"way": "engine", "what": "engine", "one_ms": 1.0}], list(rows.values()))
    assert "mode compiled" in table and len(table.splitlines()) == 6


def test_a_chapter_run_bench_leaves_the_ways_out(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("the chapter's own bench measured the ways (a minute)")

    monkeypatch.setattr(bench, "ways_to_floor", refuse)
    monkeypatch.setattr(bench, "kernels_by_members", refuse)
    results, source = bench.load_or_run("smoke", tmp_path / "absent.json")
    assert results["ways"] is None and results["kernels"] is None
    assert "not measured here" in format_ways(results["ways"])


def test_trained_members_counts_every_part_of_an_entry():
    """A flat entry's members are its parameters' leading size; App. D.3's entry keeps one set
    per gating, and its members are their sum (the performance chapter lists every recorded
    run's cost by it); an entry without parameters is a clear error."""

    from gated_attention.readings.performance import trained as trained_members

    flat = {"params": {"W": torch.zeros(7, 3, 3), "lam": torch.zeros(7, 3)}, "eval_loss": 1}
    assert trained_members(flat) == 7
    parts = {g: {"params": {"W": torch.zeros(k, 2)}} for g, k in (("io", 50), ("ce", 45))}
    assert trained_members({**parts, "note": "x"}) == 95
    with pytest.raises(ValueError, match="no trained parameters"):
        trained_members({"eval_loss": torch.zeros(3)})


def test_every_recorded_run_has_a_member_count():
    """The cost table of the performance chapter reads every recorded run that trained."""
    from gated_attention import experiments
    from gated_attention.readings.performance import trained as trained_members

    for name in experiments.recorded_names():
        run = experiments.recorded(name)
        if hasattr(run.config, "train"):
            assert trained_members(run.tensors) > 0, name


def test_adamw_on_one_flat_vector_is_adamw():
    """Way (e): the weights as views of one flat vector and its six-operation AdamW move them
    as the engine's fused AdamW does (float64, the schedule and the weight decay of each)."""
    from gated_attention.engine import TrainConfig
    from gated_attention.engine.loop import optimiser
    from gated_attention.models.fast_path import pack_params
    from lab import bench_ways

    params, _, _ = bench_ways._setup(1, 4, 3, 5, 2, seed=0)
    c = TrainConfig(steps=10, lr=1e-2, weight_decay=0.1, warmup_steps=2)
    P = {k: v.clone().requires_grad_(True) for k, v in pack_params(params).items()}
    opt, sched = optimiser(P, c, ("nu",))
    views, flat_opt = bench_ways.FlatAdamW.over(P, c, ("nu",))
    flat_sched = torch.optim.lr_scheduler.LambdaLR(
        flat_opt, lambda s: bench_ways.cosine_lr(s, c) / c.lr
    )
    target = {k: torch.randn_like(v) for k, v in P.items()}
    for _ in range(5):
        for weights, o, s in ((P, opt, sched), (views, flat_opt, flat_sched)):
            o.zero_grad(set_to_none=True)
            sum(((weights[k] - target[k]) ** 3).sum() for k in weights).backward()
            o.step()
            s.step()
    for k in P:
        torch.testing.assert_close(views[k], P[k], rtol=1e-12, atol=1e-14)
    assert not torch.allclose(P["nu"], pack_params(params)["nu"])  # it did move
