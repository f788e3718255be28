"""``make bench``: how fast the training engine is, against its reference and the machine's peak.

Measures, on this machine (``python -m lab.bench --out _build/bench.json``):
    engine      steps/s of ``engine.train`` (mode "fast") at the Sec. 4.1 config: d 4, n = m =
                100, T 32, batch 64 (the paper's network, one run), and its "step_kernels"
    compiled    the same in mode "compiled" (the step through ``torch.compile``), for the one
                student and the batched ensemble below (quick profile only: compiling takes
                ~10 s per shape)
    reference   steps/s of the same training in mode "reference" (the loop over t of Eq. 2)
    batched     a 16-member ensemble of n = m = 28 students (Fig. 3A sizes) trained together:
                member-steps/s (16 x ensemble steps/s)
    sequential  the same 16 runs one after another: member-steps/s
    GFLOP/s     the engine's achieved matrix-multiply FLOP rate (``step_flops``) against
                ``gemm_peak_gflops``, the best rate of a timed 2048 x 2048 float32 matmul
                (on a GPU also ``gemm_peak_tf32_gflops``: the same with TF32 products allowed).

    floor       the matrix products of one engine step (forward + backward), each timed alone
                (``products_floor``): the time of a step in which everything else were free.
                The reference's step time over this floor bounds the engine's speed-up
                (``engine_speedup_bound``) for these products on this machine.

    subnormal   milliseconds of the engine's forward + backward (``fast_path.fused_loss``) on
                the trained students of the quick teacher-identification run (read from the
                results cache; skipped when it is not there), one thread, with subnormal floats
                flushed to zero (the package's setting, ``training.flush_denormals``) and not.

    profile     where one engine step's time goes, part by part, and the floor of the products
                every implementation of Eq. (2) runs (``step_profile``), for the one student
                and for the 16-member ensemble; and the engine's steps/s against the model
                size n (``size_curve``)

    ways        each way to the floor (torch.compile, the hand-written backward, the AdamW
                kernel, the data) beside the engine's step (``bench_ways``); a step's kernels
                by mode and members (``device_time``); jobs at once on a GPU (``bench_overlap``)

    families    the training cost per step of every model family (``models.family_registry``) at a
                matched parameter count (``family_bench.family_costs``): ms per step and
                member-steps/s of a 3-member ensemble of each

    paper       the engine's rate turned into the time of the paper's main run: 1,000,000 steps
                of one Sec. 4.1 student (``PAPER_STEPS`` / engine steps/s)

Each timing is the fastest of ``REPEATS`` runs (quick: 3), so that a moment of other work on
the machine does not decide the number; the runs of all measurements take turns
(``bench_timing.fastest``), so that a slow stretch of the machine slows the engine and the
reference alike.

Modules: this one measures and runs the command line; ``bench_products`` the step's products,
``family_bench`` the families, ``bench_timing`` the timing, ``lab.bench_table`` the tables.

Device: the bench runs where ``engine.train`` runs (``--device``, else
$GATED_ATTENTION_DEVICE, else the CPU). On a device other than the CPU it first checks that the
engine computes there what it computes on the CPU (``device_agreement``: a small float64
ensemble trained on both, largest weight difference) and skips the subnormal measurement (a
property of x86 arithmetic).

Targets (from the issue): engine >= 5x reference steps/s; batched >= 3x sequential.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from gated_attention.atomic import atomic_write_json
from gated_attention.engine import TrainConfig, hardware, resolve_device, stack_students, train
from gated_attention.experiments.profiles import check_profile, derive_seed
from gated_attention.models.gated_rnn import GatedRNN
from gated_attention.tasks.teacher_student import TeacherStudentTask
from lab.bench_overlap import overlap
from lab.bench_products import gemm_peak_gflops, products_floor, step_flops, step_products
from lab.bench_table import (
    PAPER_STEPS,
    format_families,
    format_overlap,
    format_profile,
    format_table,
    format_ways,
)
from lab.bench_timing import fastest, seconds
from lab.bench_ways import ways_to_floor
from lab.device_time import bench_run, kernels_by_members, step_kernels
from lab.family_bench import family_costs
from lab.step_profile import size_curve, step_profile

__all__ = [
    "TARGETS",
    "step_flops",
    "step_products",
    "products_floor",
    "gemm_peak_gflops",
    "device_agreement",
    "PAPER_STEPS",
    "family_costs",
    "run_bench",
    "default_out",
    "load_or_run",
    "recorded_benches",
    "format_table",
    "format_families",
    "format_ways",
    "main",
]

#: the issue's targets: engine / reference steps/s, batched / sequential throughput
TARGETS = {"engine_speedup": 5.0, "ensemble_speedup": 3.0}

#: steps timed per measurement: (engine, reference, batched, sequential per run, warm-up)
STEPS = {"quick": (400, 60, 200, 100, 20), "smoke": (10, 3, 5, 3, 1)}
#: timed runs of each product in ``products_floor`` (the fastest is kept)
FLOOR_REPEATS = {"quick": 30, "smoke": 2}
#: the matrix size of the peak measurement (smoke: small, only proves the code path)
GEMM_SIZE = {"quick": 2048, "smoke": 512}


def device_agreement(device: str | torch.device, steps: int = 30) -> float:
    """The largest |weight difference| between a small float64 ensemble (two students of
    different sizes, d = 4, T = 8) trained ``steps`` steps on ``device`` and on the CPU."""
    task = TeacherStudentTask.from_seed(4, seed=derive_seed(0, "teacher"), T=8)
    students = [GatedRNN(4, n, n, seed=n, dtype=torch.float64) for n in (6, 10)]
    params, masks = stack_students(students)
    c = TrainConfig(steps=steps, lr=1e-2, batch_size=16, dtype="float64", chunk_steps=10)
    kw = dict(data_seeds=[1, 2], masks=masks, progress=False)
    there = train([task, task], params, c, device=device, data_on_device=False, **kw)
    here = train([task, task], params, c, device="cpu", **kw)
    return max(float((there.params[k] - v).abs().max()) for k, v in here.params.items())


#: each measurement is repeated this many times and the fastest kept (the least disturbed)
REPEATS = {"quick": 3, "smoke": 1}


def _train_timer(tasks, students, steps: int, mode: str, warmup: int, seed: int, device=None):
    """A function that times ``steps`` training steps (setup included) and returns seconds;
    ``warmup`` untimed steps run once first (``train`` returns CPU tensors: the device is
    done when it returns)."""
    params, masks = stack_students(students)
    seeds = [derive_seed(seed + e, "data") for e in range(len(tasks))]
    kw = dict(data_seeds=seeds, masks=masks, progress=False, device=device)
    train(tasks, params, TrainConfig(steps=warmup, mode=mode, chunk_steps=warmup), **kw)

    def timed() -> float:
        t0 = time.perf_counter()
        train(tasks, params, TrainConfig(steps=steps, mode=mode, log_every=steps), **kw)
        return time.perf_counter() - t0

    return timed


def subnormal_cost(repeats: int = 30) -> dict | None:
    """The ``subnormal`` measurement of the module docstring; None without the cached run.

    Weight decay shrinks the weights of dead neurons geometrically; products of them fall below
    the smallest normal float32 (1.2e-38), where many x86 processors take a slow path. One thread,
    so that switching flush-to-zero on the calling thread covers all the work.
    """
    from gated_attention.engine import flush_denormals

    trained = _trained_step()
    if trained is None:
        return None
    step, config, entry = trained

    def best_ms() -> float:
        step()  # warm-up
        return 1e3 * min(seconds(step) for _ in range(repeats))

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.set_flush_denormal(False)
        plain = best_ms()
        flush_denormals()
        flushed = best_ms()
    finally:
        flush_denormals()
        torch.set_num_threads(before)
    return {
        "entry": entry,
        "members": len(config.seeds),
        "n": config.n,
        "T": config.T,
        "flushed_ms": flushed,
        "subnormal_ms": plain,
        "slowdown": plain / flushed,
        "threads": 1,
    }


def _trained_step():
    """(step, config, entry name): the fused loss's forward + backward on the trained students
    of the cached quick teacher-identification run, on one batch; None when it is not cached."""
    from gated_attention.engine import sample_chunk
    from gated_attention.experiments import teacher_identification_config
    from gated_attention.experiments.cache import entry_path, read_entry
    from gated_attention.models.fast_path import (
        fused_loss,
        inputs_neuron_major,
        pack_params,
        targets_neuron_major,
    )

    config = teacher_identification_config("quick")
    path = entry_path(config)
    if not (path / "manifest.json").is_file():
        return None  # not cached
    _, tensors = read_entry(path)  # intact, or a ValueError naming the problem
    P = {
        k: v.to(torch.float32).requires_grad_(True)
        for k, v in pack_params(tensors["params"]).items()
    }
    tasks = [config.task(seed) for seed in config.seeds]
    gens = [torch.Generator().manual_seed(derive_seed(s, "bench")) for s in config.seeds]
    x, y = sample_chunk(tasks, gens, 1, config.train.batch_size)
    X, Y = inputs_neuron_major(x[0].float()), targets_neuron_major(y[0].float(), None)

    def step() -> None:
        fused_loss(X, P, Y, config.T, None).sum().backward()
        for v in P.values():
            v.grad = None

    return step, config, path.name


def run_bench(
    profile: str = "quick",
    seed: int = 0,
    threads: int | None = None,
    device: str | None = None,
    ways: bool = True,
) -> dict:
    """Run every measurement of the module docstring.

    ``profile``: "smoke" (seconds, one thread unless ``threads`` says otherwise; the numbers only
    prove the code path) or "quick"/"paper" (the same, about a minute). ``threads``: torch
    threads during the bench (default: as set). ``device``: where to train (default:
    $GATED_ATTENTION_DEVICE, else the CPU). ``ways``: measure the ways to the floor
    (``bench_ways``, about a minute on one thread; ``load_or_run`` leaves them out)."""
    check_profile(profile)
    dev = resolve_device(device)
    kind = "smoke" if profile == "smoke" else "quick"
    if threads is None and kind == "smoke":
        threads = 1  # seconds, whatever else runs: the smoke numbers only prove the code path
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _measure(kind, seed, dev, ways)
    finally:
        torch.set_num_threads(before)


def _measure(kind: str, seed: int, dev: torch.device, ways: bool = True) -> dict:
    on_cpu = dev.type == "cpu"
    agreement = None if on_cpu else device_agreement(dev, steps=3 if kind == "smoke" else 30)
    d, n, T, B, E, n_small = 4, 100, 32, 64, 16, 28
    out = _rates(kind, seed, dev)
    flops = step_flops(d, n, n, T, B)
    peak = gemm_peak_gflops(GEMM_SIZE[kind], device=dev)
    floor = products_floor(d, n, n, T, B, repeats=FLOOR_REPEATS[kind], device=dev)
    eng = out["engine_steps_per_s"]
    out.update(
        {
            "profile": kind,
            "config": {"d": d, "n": n, "m": n, "T": T, "batch": B, "ensemble": E},
            "device": str(dev),
            "device_max_abs_diff": agreement,
            "paper_run_hours": PAPER_STEPS / eng / 3600,
            "step_gflop": flops["total"] / 1e9,
            "engine_gflops": eng * flops["total"] / 1e9,
            "gemm_peak_gflops": peak,
            "gemm_peak_tf32_gflops": (
                None if on_cpu else gemm_peak_gflops(GEMM_SIZE[kind], device=dev, tf32=True)
            ),
            "gemm_size": GEMM_SIZE[kind],
            "products_floor_ms": floor["ms"],
            "products": floor["products"],
            "torch_version": torch.__version__,
            "threads": torch.get_num_threads(),
            "hardware": hardware(dev),
            "repeats": REPEATS[kind],
            "targets": dict(TARGETS),
            "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    )
    out["config"]["n_small"] = n_small
    out["step_kernels"] = step_kernels(bench_run(n, d, T, B))["step_kernels"]  # calibrate's
    out["engine_speedup"] = eng / out["reference_steps_per_s"]
    # the reference's step over the engine's products alone: the most any engine issuing
    # these products could gain here
    out["engine_speedup_bound"] = 1e3 / out["reference_steps_per_s"] / floor["ms"]
    out["ensemble_speedup"] = out["batched_steps_per_s"] / out["sequential_steps_per_s"]
    out["peak_fraction"] = out["engine_gflops"] / peak
    out["targets_met"] = {k: out[k] >= v for k, v in TARGETS.items()}
    out.update(_profiles(kind, seed, dev, ways))
    return out


def _rates(kind: str, seed: int, dev: torch.device) -> dict:
    """The steps/s of the module docstring (engine, reference, compiled, batched, sequential),
    all timers taking turns (``fastest``)."""
    n_eng, n_ref, n_bat, n_seq, warm = STEPS[kind]
    d, n, T, E, n_small = 4, 100, 32, 16, 28
    task = TeacherStudentTask.from_seed(d, seed=derive_seed(seed, "teacher"), T=T)
    big = [GatedRNN(d, n, n, seed=derive_seed(seed, "student"))]
    small = [GatedRNN(d, n_small, n_small, seed=derive_seed(seed + e, "student")) for e in range(E)]
    timers = {
        "engine": _train_timer([task], big, n_eng, "fast", warm, seed, dev),
        "reference": _train_timer([task], big, n_ref, "reference", warm, seed, dev),
        "batched": _train_timer([task] * E, small, n_bat, "fast", warm, seed, dev),
    }
    if kind == "quick":  # mode "compiled": ~10 s of compiling per shape, untimed (warm-up)
        timers["compiled"] = _train_timer([task], big, n_eng, "compiled", warm, seed, dev)
        timers["batched compiled"] = _train_timer(
            [task] * E, small, n_bat, "compiled", warm, seed, dev
        )
    for e, s in enumerate(small):  # the sequential runs: member e alone, its own data seed
        timers[f"run {e}"] = _train_timer([task], [s], n_seq, "fast", warm, seed + e, dev)
    best = fastest(timers, REPEATS[kind])
    compiled = best.get("compiled"), best.get("batched compiled")
    return {
        "engine_steps_per_s": n_eng / best["engine"],
        "reference_steps_per_s": n_ref / best["reference"],
        "batched_steps_per_s": E * n_bat / best["batched"],
        "sequential_steps_per_s": E * n_seq / sum(best[f"run {e}"] for e in range(E)),
        "compiled_steps_per_s": None if compiled[0] is None else n_eng / compiled[0],
        "batched_compiled_steps_per_s": None if compiled[1] is None else E * n_bat / compiled[1],
        "steps_timed": {"engine": n_eng, "reference": n_ref, "batched": n_bat, "sequential": n_seq},
    }


def _profiles(kind: str, seed: int, dev: torch.device, ways: bool) -> dict:
    """The measurements beside the rates: subnormals, families, the step's profile (one student
    and the ensemble), the ways and the counts (with ``ways``), the size curve."""
    on_cpu, E, n_small = dev.type == "cpu", 16, 28
    prof_steps = {"smoke": 10, "quick": 200}[kind]
    sizes = (1, 2) if kind == "smoke" else (1, 4, 16, 64)
    modes = ("fast", "compiled") if kind == "quick" else ("fast",)  # compiling: seconds a size
    return {
        "subnormal": subnormal_cost(30 if kind == "quick" else 3) if on_cpu else None,
        # with the ways (make bench), the compiled cell loops too (a minute of compiling each)
        "families": family_costs(kind, seed, dev, compiled=ways and kind == "quick"),
        "step_profile": step_profile(
            repeats=FLOOR_REPEATS[kind], seed=seed, device=dev, steps=prof_steps
        ),
        "ensemble_profile": step_profile(
            n=n_small,
            E=E,
            repeats=FLOOR_REPEATS[kind],
            seed=seed,
            device=dev,
            steps=prof_steps // 4,
        ),
        "ways": ways_to_floor(kind, seed, dev) if ways else None,
        "side_by_side": None if on_cpu else overlap(kind, seed, dev),  # a CPU: one by one
        "kernels": kernels_by_members(sizes, modes=modes) if ways else None,
        "size_curve": size_curve(
            sizes=(8, 16) if kind == "smoke" else (16, 32, 48, 64, 100, 128),
            steps=5 if kind == "smoke" else 100,
            seed=seed,
            device=dev,
        ),
    }


def recorded_benches() -> dict[str, dict]:
    """Bench results measured on hardware this machine may not have (a GPU), shipped with the
    package as ``recorded/bench-<name>.json``: what ``run_bench`` returned there, plus a
    "provenance" entry (commit, command, how it ran). By name; a file that is not such a
    result is an error naming it."""
    from gated_attention.experiments.recorded_runs import RECORDED_ROOT

    out = {}
    for path in sorted(RECORDED_ROOT.glob("bench-*.json")):
        try:
            r = json.loads(path.read_text())
        except ValueError as err:
            raise ValueError(f"recorded bench {path} is not valid JSON ({err})") from None
        missing = [k for k in ("engine_speedup", "ensemble_speedup", "provenance") if k not in r]
        if missing:
            raise ValueError(f"recorded bench {path} lacks {', '.join(missing)}")
        out[path.stem.removeprefix("bench-")] = r
    return out


def default_out() -> Path:
    """Where ``make bench`` writes: ``<build>/bench.json`` (the scorecard's build folder)."""
    from gated_attention.report.scorecard import build_dir

    return build_dir() / "bench.json"


def load_or_run(profile: str, path: str | os.PathLike | None = None) -> tuple[dict, str]:
    """The results of ``make bench`` if ``path`` (default ``default_out()``) exists, else a bench
    run now on one thread (steady even on a busy machine): "smoke" for the smoke profile
    (seconds), "quick" otherwise (about a minute).

    A file from before the family costs gets them measured now (``family_costs``), on one thread
    (seconds), and the source says so.

    Returns ``(results, source)``, source saying where the numbers come from.
    """
    check_profile(profile)
    path = default_out() if path is None else Path(path)
    kind = "smoke" if profile == "smoke" else "quick"
    if not path.exists():
        source = f"a {kind} bench run in this chapter on one thread ({path.name} absent)"
        return run_bench(kind, threads=1, ways=False), source
    results, source = json.loads(path.read_text()), f"{path.name} written by make bench"
    if "families" not in results:
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            results["families"] = family_costs(kind)
        finally:
            torch.set_num_threads(before)
        source += f" (the family costs measured now, {kind}, on one thread: the file predates them)"
    return results, source


def main(argv: list[str] | None = None) -> dict:
    """Command line: ``python -m lab.bench [--out FILE] [--profile quick|smoke]
    [--threads N] [--device DEVICE]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--profile", default="quick", choices=("quick", "smoke"))
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all)")
    parser.add_argument(
        "--device", default=None, help="where to train (default: $GATED_ATTENTION_DEVICE or cpu)"
    )
    args = parser.parse_args(argv)
    results = run_bench(args.profile, threads=args.threads, device=args.device)
    print(format_table(results))
    print(format_families(results["families"]))
    print(format_profile(results["step_profile"]))
    print(format_profile(results["ensemble_profile"]))
    print(format_ways(results["ways"], results.get("kernels")))
    print(format_overlap(results.get("side_by_side")))
    if args.out is not None:
        atomic_write_json(args.out, results, indent=1)
        print(f"written: {args.out}")
    return results


if __name__ == "__main__":
    main()
