"""``make bench``: how fast the training engine is, against its reference and the machine's peak.

Measures, on this machine (``python -m gated_attention.bench --out _build/bench.json``):
    engine      steps/s of ``training.train`` (mode "fast") at the Sec. 4.1 config:
                d 4, n = m = 100, T 32, batch 64 (the paper's network, one run)
    reference   steps/s of the same training in mode "reference" (the loop over t of Eq. 2)
    batched     a 16-member ensemble of n = m = 28 students (Fig. 3A sizes) trained together:
                member-steps/s (16 x ensemble steps/s)
    sequential  the same 16 runs one after another: member-steps/s
    GFLOP/s     the engine's achieved matrix-multiply FLOP rate (``step_flops``) against
                ``gemm_peak_gflops``, the best rate of a timed 2048 x 2048 float32 matmul.

FLOP count (``step_flops``): only matrix products are counted (elementwise work is ignored),
2 FLOPs per multiply-add, as computed (the decay-matrix GEMM includes its zero upper triangle).
Forward, per step with R = B T rows: input gating 2 (2n)(d+1) R, scan 2 n T^2 B, output gating
2 (2m) n R, readout 2 d_out m R. Backward: two GEMMs of the same size per forward GEMM (gradient
of both operands), except the input gating, whose input x needs no gradient (one GEMM).

    subnormal   milliseconds of the engine's forward + backward (``fast_path.fused_loss``) on
                the trained students of the quick teacher-identification run (read from the
                results cache; skipped when it is not there), one thread, with subnormal floats
                flushed to zero (the package's setting, ``training.flush_denormals``) and not.

    paper       the engine's rate turned into the time of the paper's main run: 1,000,000 steps
                of one Sec. 4.1 student (``PAPER_STEPS`` / engine steps/s)

Each timing is the fastest of ``REPEATS`` runs (quick: 3), so that a moment of other work on
the machine does not decide the number.

Device: the bench runs where ``training.train`` runs (``--device``, else
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

from .experiments import check_profile, derive_seed, hardware
from .gated_rnn import GatedRNN
from .tasks import TeacherStudentTask
from .training import TrainConfig, resolve_device, stack_students, train

__all__ = [
    "TARGETS",
    "step_flops",
    "gemm_peak_gflops",
    "device_agreement",
    "PAPER_STEPS",
    "run_bench",
    "default_out",
    "load_or_run",
    "format_table",
    "main",
]

#: the issue's targets: engine / reference steps/s, batched / sequential throughput
TARGETS = {"engine_speedup": 5.0, "ensemble_speedup": 3.0}

#: steps timed per measurement: (engine, reference, batched, sequential per run, warm-up)
STEPS = {"quick": (400, 60, 200, 100, 20), "smoke": (10, 3, 5, 3, 1)}
#: the step count of the paper's main run (Sec. 4.1), for the projected time
PAPER_STEPS = 1_000_000
#: the matrix size of the peak measurement (smoke: small, only proves the code path)
GEMM_SIZE = {"quick": 2048, "smoke": 512}


def step_flops(d: int, n: int, m: int, T: int, B: int, d_out: int | None = None) -> dict:
    """Matrix-multiply FLOPs of one training step (forward + backward); see the module docstring."""
    d_out = d if d_out is None else d_out
    R = B * T
    fwd = {
        "input_gating": 2 * (2 * n) * (d + 1) * R,
        "scan": 2 * n * T * T * B,
        "output_gating": 2 * (2 * m) * n * R,
        "readout": 2 * d_out * m * R,
    }
    bwd = {k: (1 if k == "input_gating" else 2) * v for k, v in fwd.items()}
    forward, backward = sum(fwd.values()), sum(bwd.values())
    return {"forward": forward, "backward": backward, "total": forward + backward, "parts": fwd}


def gemm_peak_gflops(size: int = 2048, repeats: int = 5, device: str | None = None) -> float:
    """The best GFLOP/s of ``repeats`` timed (size x size) @ (size x size) float32 products on
    ``device`` (default: the CPU)."""
    dev = torch.device("cpu") if device is None else resolve_device(device)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=g).to(dev)
    b = torch.randn(size, size, generator=g).to(dev)
    a @ b  # warm-up
    _sync(dev)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        _sync(dev)
        best = min(best, time.perf_counter() - t0)
    return 2 * size**3 / best / 1e9


def _sync(dev: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously; a CPU has nothing queued)."""
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def device_agreement(device: str | torch.device, steps: int = 30) -> float:
    """The largest |weight difference| between a small float64 ensemble (two students of
    different sizes, d = 4, T = 8) trained ``steps`` steps on ``device`` and on the CPU."""
    task = TeacherStudentTask.from_seed(4, seed=derive_seed(0, "teacher"), T=8)
    students = [GatedRNN(4, n, n, seed=n, dtype=torch.float64) for n in (6, 10)]
    params, masks = stack_students(students)
    c = TrainConfig(steps=steps, lr=1e-2, batch_size=16, dtype="float64", chunk_steps=10)
    kw = dict(data_seeds=[1, 2], masks=masks, progress=False)
    there = train([task, task], params, c, device=device, **kw)
    here = train([task, task], params, c, device="cpu", **kw)
    return max(float((there.params[k] - v).abs().max()) for k, v in here.params.items())


#: each measurement is repeated this many times and the fastest kept (the least disturbed)
REPEATS = {"quick": 3, "smoke": 1}


def _time_train(
    tasks, students, steps: int, mode: str, warmup: int, seed: int, repeats: int = 1, device=None
) -> float:
    """Seconds for ``steps`` training steps (after ``warmup`` untimed ones), setup included;
    the fastest of ``repeats`` timings (``train`` returns CPU tensors: the device is done)."""
    params, masks = stack_students(students)
    seeds = [derive_seed(seed + e, "data") for e in range(len(tasks))]
    kw = dict(data_seeds=seeds, masks=masks, progress=False, device=device)
    train(tasks, params, TrainConfig(steps=warmup, mode=mode, chunk_steps=warmup), **kw)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        train(tasks, params, TrainConfig(steps=steps, mode=mode, log_every=steps), **kw)
        best = min(best, time.perf_counter() - t0)
    return best


def subnormal_cost(repeats: int = 30) -> dict | None:
    """The ``subnormal`` measurement of the module docstring; None without the cached run.

    Weight decay shrinks the weights of dead neurons geometrically; products of them fall below
    the smallest normal float32 (1.2e-38), where x86 arithmetic is many times slower. One thread,
    so that switching flush-to-zero on the calling thread covers all the work.
    """
    from .analysis.configs import teacher_identification_config
    from .experiments import _load_entry, entry_path
    from .fast_path import fused_loss, inputs_neuron_major, pack_params, targets_neuron_major
    from .training import flush_denormals, sample_chunk

    config = teacher_identification_config("quick")
    path = entry_path(config)
    found = _load_entry(path, config)
    if found is None:
        return None
    P = {k: v.to(torch.float32) for k, v in pack_params(found.params).items()}
    tasks = [config.task(seed) for seed in config.seeds]
    gens = [torch.Generator().manual_seed(derive_seed(s, "bench")) for s in config.seeds]
    x, y = sample_chunk(tasks, gens, 1, config.train.batch_size)
    X, Y = inputs_neuron_major(x[0].float()), targets_neuron_major(y[0].float(), None)
    P = {k: v.requires_grad_(True) for k, v in P.items()}

    def step() -> None:
        fused_loss(X, P, Y, config.T, None).sum().backward()
        for v in P.values():
            v.grad = None

    def best_ms() -> float:
        step()  # warm-up
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        return 1e3 * min(times)

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
        "entry": path.name,
        "members": len(config.seeds),
        "n": config.n,
        "T": config.T,
        "flushed_ms": flushed,
        "subnormal_ms": plain,
        "slowdown": plain / flushed,
        "threads": 1,
    }


def run_bench(
    profile: str = "quick", seed: int = 0, threads: int | None = None, device: str | None = None
) -> dict:
    """Run every measurement of the module docstring.

    ``profile``: "smoke" (seconds, one thread unless ``threads`` says otherwise; the numbers only
    prove the code path) or "quick"/"paper" (the same, about a minute). ``threads``: torch
    threads during the bench (default: as set). ``device``: where to train (default:
    $GATED_ATTENTION_DEVICE, else the CPU)."""
    check_profile(profile)
    dev = resolve_device(device)
    kind = "smoke" if profile == "smoke" else "quick"
    if threads is None and kind == "smoke":
        threads = 1  # seconds, whatever else runs: the smoke numbers only prove the code path
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _measure(kind, seed, dev)
    finally:
        torch.set_num_threads(before)


def _measure(kind: str, seed: int, dev: torch.device) -> dict:
    on_cpu = dev.type == "cpu"
    agreement = None if on_cpu else device_agreement(dev, steps=3 if kind == "smoke" else 30)
    n_eng, n_ref, n_bat, n_seq, warm = STEPS[kind]
    d, n, T, B, E, n_small = 4, 100, 32, 64, 16, 28
    task = TeacherStudentTask.from_seed(d, seed=derive_seed(seed, "teacher"), T=T)
    big = [GatedRNN(d, n, n, seed=derive_seed(seed, "student"))]
    r = REPEATS[kind]
    t_eng = _time_train([task], big, n_eng, "fast", warm, seed, r, dev)
    t_ref = _time_train([task], big, n_ref, "reference", warm, seed, r, dev)
    small = [GatedRNN(d, n_small, n_small, seed=derive_seed(seed + e, "student")) for e in range(E)]
    t_bat = _time_train([task] * E, small, n_bat, "fast", warm, seed, r, dev)
    t_seq = sum(
        _time_train([task], [s], n_seq, "fast", warm, seed + e, r, dev) for e, s in enumerate(small)
    )
    flops = step_flops(d, n, n, T, B)
    peak = gemm_peak_gflops(GEMM_SIZE[kind], device=dev)
    eng = n_eng / t_eng
    out = {
        "profile": kind,
        "config": {"d": d, "n": n, "m": n, "T": T, "batch": B, "ensemble": E, "n_small": n_small},
        "device": str(dev),
        "device_max_abs_diff": agreement,
        "engine_steps_per_s": eng,
        "paper_run_hours": PAPER_STEPS / eng / 3600,
        "reference_steps_per_s": n_ref / t_ref,
        "batched_steps_per_s": E * n_bat / t_bat,
        "sequential_steps_per_s": E * n_seq / t_seq,
        "step_gflop": flops["total"] / 1e9,
        "engine_gflops": eng * flops["total"] / 1e9,
        "gemm_peak_gflops": peak,
        "gemm_size": GEMM_SIZE[kind],
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "hardware": hardware(dev),
        "steps_timed": {"engine": n_eng, "reference": n_ref, "batched": n_bat, "sequential": n_seq},
        "repeats": r,
        "targets": dict(TARGETS),
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    out["engine_speedup"] = out["engine_steps_per_s"] / out["reference_steps_per_s"]
    out["ensemble_speedup"] = out["batched_steps_per_s"] / out["sequential_steps_per_s"]
    out["peak_fraction"] = out["engine_gflops"] / peak
    out["targets_met"] = {k: out[k] >= v for k, v in TARGETS.items()}
    out["subnormal"] = subnormal_cost(30 if kind == "quick" else 3) if on_cpu else None
    return out


def default_out() -> Path:
    """Where ``make bench`` writes: ``<build>/bench.json`` (the scorecard's build folder)."""
    from .scorecard import build_dir

    return build_dir() / "bench.json"


def load_or_run(profile: str, path: str | os.PathLike | None = None) -> tuple[dict, str]:
    """The results of ``make bench`` if ``path`` (default ``default_out()``) exists, else a bench
    run now on one thread (steady even on a busy machine): "smoke" for the smoke profile
    (seconds), "quick" otherwise (about a minute).

    Returns ``(results, source)``, source saying where the numbers come from.
    """
    check_profile(profile)
    path = default_out() if path is None else Path(path)
    if path.exists():
        return json.loads(path.read_text()), f"{path.name} written by make bench"
    kind = "smoke" if profile == "smoke" else "quick"
    source = f"a {kind} bench run in this chapter on one thread ({path.name} absent)"
    return run_bench(kind, threads=1), source


def format_table(r: dict) -> str:
    """The bench results as a plain-text table."""
    rows = [
        ("engine (fast), Sec. 4.1 config", f"{r['engine_steps_per_s']:.1f} steps/s"),
        ("reference loop, Sec. 4.1 config", f"{r['reference_steps_per_s']:.1f} steps/s"),
        ("  engine / reference", f"{r['engine_speedup']:.1f}x (target >= 5x)"),
        (
            f"  {PAPER_STEPS:,} steps at the engine's rate",
            f"{PAPER_STEPS / r['engine_steps_per_s'] / 3600:.1f} h (the paper's Sec. 4.1 run, "
            "one student)",
        ),
        ("16 x n=28 ensemble, batched", f"{r['batched_steps_per_s']:.1f} member-steps/s"),
        ("16 x n=28, sequential runs", f"{r['sequential_steps_per_s']:.1f} member-steps/s"),
        ("  batched / sequential", f"{r['ensemble_speedup']:.1f}x (target >= 3x)"),
        ("FLOPs per step (fwd + bwd)", f"{r['step_gflop'] * 1e3:.0f} MFLOP"),
        ("engine achieved", f"{r['engine_gflops']:.1f} GFLOP/s"),
        (f"matmul peak ({r['gemm_size']}^3 float32)", f"{r['gemm_peak_gflops']:.1f} GFLOP/s"),
        ("  engine / peak", f"{100 * r['peak_fraction']:.0f}%"),
        ("torch, threads", f"{r['torch_version']}, {r['threads']}"),
        *_device_rows(r),
        *_subnormal_rows(r.get("subnormal"), r.get("device", "cpu")),
        ("cpu", f"{r['hardware']['cpu']} ({r['hardware']['cpu_count']} cores)"),
    ]
    width = max(len(a) for a, _ in rows)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in rows)


def _device_rows(r: dict) -> list[tuple[str, str]]:
    """The device and, off the CPU, its agreement with the CPU (results of older benches: CPU)."""
    dev = r.get("device", "cpu")
    if dev == "cpu":
        return [("device", "cpu")]
    diff = r["device_max_abs_diff"]
    return [("device", dev), ("  largest weight difference to the CPU", f"{diff:.1e} (float64)")]


def _subnormal_rows(sub: dict | None, device: str = "cpu") -> list[tuple[str, str]]:
    if device != "cpu":
        return [("trained student, subnormals", "not measured (a CPU measurement)")]
    if not sub:
        return [("trained student, subnormals", "not measured (no cached quick run)")]
    return [
        (
            f"trained students (x{sub['members']}), fwd+bwd",
            f"{sub['flushed_ms']:.2f} ms flushed, {sub['subnormal_ms']:.2f} ms with subnormals",
        ),
        ("  subnormal slowdown (1 thread)", f"{sub['slowdown']:.1f}x"),
    ]


def main(argv: list[str] | None = None) -> dict:
    """Command line: ``python -m gated_attention.bench [--out FILE] [--profile quick|smoke]
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
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_name(args.out.name + ".tmp")
        tmp.write_text(json.dumps(results, indent=1))
        os.replace(tmp, args.out)
        print(f"written: {args.out}")
    return results


if __name__ == "__main__":
    main()
