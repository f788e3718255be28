"""``make bench``: how fast the training engine is, against its reference and the machine's peak.

Measures, on this machine (``python -m gated_attention.tools.bench --out _build/bench.json``):
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

    floor       the matrix products of one engine step (forward + backward), each recorded as
                the engine issues it (operation, shapes, strides: ``step_products``) and then
                timed alone on fresh operands, fastest of many (``products_floor``): the time
                of a step in which everything else (elementwise work, data, optimiser) were
                free. The reference's step time over this floor bounds the engine's speed-up
                (``engine_speedup_bound``) for these products on this machine.

    subnormal   milliseconds of the engine's forward + backward (``fast_path.fused_loss``) on
                the trained students of the quick teacher-identification run (read from the
                results cache; skipped when it is not there), one thread, with subnormal floats
                flushed to zero (the package's setting, ``training.flush_denormals``) and not.

    paper       the engine's rate turned into the time of the paper's main run: 1,000,000 steps
                of one Sec. 4.1 student (``PAPER_STEPS`` / engine steps/s)

Each timing is the fastest of ``REPEATS`` runs (quick: 3), so that a moment of other work on
the machine does not decide the number; the runs of all measurements take turns (``_fastest``),
so that a slow stretch of the machine slows the engine and the reference alike.

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
from torch.utils._python_dispatch import TorchDispatchMode

from ..atomic import atomic_write_json
from ..engine import TrainConfig, hardware, resolve_device, stack_students, train
from ..experiments.profiles import check_profile, derive_seed
from ..models.gated_rnn import GatedRNN
from ..tasks.teacher_student import TeacherStudentTask

__all__ = [
    "TARGETS",
    "step_flops",
    "step_products",
    "products_floor",
    "gemm_peak_gflops",
    "device_agreement",
    "PAPER_STEPS",
    "run_bench",
    "default_out",
    "load_or_run",
    "recorded_benches",
    "format_table",
    "main",
]

#: the issue's targets: engine / reference steps/s, batched / sequential throughput
TARGETS = {"engine_speedup": 5.0, "ensemble_speedup": 3.0}

#: steps timed per measurement: (engine, reference, batched, sequential per run, warm-up)
STEPS = {"quick": (400, 60, 200, 100, 20), "smoke": (10, 3, 5, 3, 1)}
#: the step count of the paper's main run (Sec. 4.1), for the projected time
PAPER_STEPS = 1_000_000
#: timed runs of each product in ``products_floor`` (the fastest is kept)
FLOOR_REPEATS = {"quick": 30, "smoke": 2}
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


#: the matrix-product operations a step can issue (``torch.matmul`` of batched 4-d tensors
#: reaches the dispatcher as ``bmm``)
_PRODUCTS = {
    torch.ops.aten.mm.default,
    torch.ops.aten.addmm.default,
    torch.ops.aten.bmm.default,
    torch.ops.aten.baddbmm.default,
}


class _RecordProducts(TorchDispatchMode):
    """Records every matrix product run under it: (operation, [(shape, stride) or value])."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in _PRODUCTS:
            spec = [(tuple(a.shape), a.stride()) if torch.is_tensor(a) else a for a in args]
            self.calls.append((func, spec, dict(kwargs or {})))
        return func(*args, **(kwargs or {}))


def step_products(
    d: int, n: int, m: int, T: int, B: int, d_out: int | None = None, seed: int = 0
) -> list[tuple]:
    """The matrix products of one engine step (``fast_path.fused_loss``, forward and backward)
    of a random student: a list of (operation, operand specs, keyword arguments), an operand
    spec being (shape, stride) as the engine passes it (transposed views included)."""
    from ..models.fast_path import fused_loss, inputs_neuron_major, pack_params

    d_out = d if d_out is None else d_out
    g = torch.Generator().manual_seed(seed)
    student = GatedRNN(d, n, m, d_out, seed=seed)
    params, _ = stack_students([student])
    P = {k: v.float().clone().requires_grad_(True) for k, v in pack_params(params).items()}
    X = inputs_neuron_major(torch.randn(1, B, T, d, generator=g))
    Y = torch.randn(1, d_out, T * B, generator=g)
    with _RecordProducts() as rec:
        fused_loss(X, P, Y, T, None).sum().backward()
    return rec.calls


def _is_operand(spec) -> bool:
    """An operand spec of ``step_products``: (shape tuple, stride tuple)."""
    return isinstance(spec, tuple) and isinstance(spec[0], tuple)


def _product_flops(spec: list) -> int:
    """2 x the multiply-adds of one recorded product (its last two operands are the factors:
    (batch, M, K) x (batch, K, N), or (M, K) x (K, N))."""
    a, b = [s[0] for s in spec if _is_operand(s)][-2:]
    batch = a[0] if len(a) == 3 else 1
    return 2 * batch * a[-2] * a[-1] * b[-1]


def products_floor(
    d: int, n: int, m: int, T: int, B: int, repeats: int = 20, device: str | None = None
) -> dict:
    """Milliseconds of the step's matrix products (``step_products``), each timed alone on
    random operands with the engine's shapes and strides (on ``device``, default the CPU): the
    fastest of ``repeats`` runs of each, summed.

    Returns {"ms": total, "gflop": total GFLOP, "products": [(shapes, GFLOP, ms), ...]}."""
    dev = torch.device("cpu") if device is None else resolve_device(device)
    g = torch.Generator().manual_seed(0)
    rows = []
    for func, spec, kwargs in step_products(d, n, m, T, B):
        args = [
            torch.empty_strided(*s, device=dev).copy_(torch.randn(s[0], generator=g))
            if _is_operand(s)
            else s
            for s in spec
        ]
        func(*args, **kwargs)  # warm-up
        _sync(dev)
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            func(*args, **kwargs)
            _sync(dev)
            best = min(best, time.perf_counter() - t0)
        shapes = " x ".join(str(list(s[0])) for s in spec if _is_operand(s))
        rows.append((shapes, _product_flops(spec) / 1e9, 1e3 * best))
    return {
        "ms": sum(r[2] for r in rows),
        "gflop": sum(r[1] for r in rows),
        "products": rows,
    }


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


def _fastest(timers: dict, repeats: int) -> dict:
    """The fastest of ``repeats`` timings of each timer, taken in turns (one round runs every
    timer once), so that a slow moment of the machine falls on every measurement alike."""
    best = {k: float("inf") for k in timers}
    for _ in range(repeats):
        for k, timed in timers.items():
            best[k] = min(best[k], timed())
    return best


def subnormal_cost(repeats: int = 30) -> dict | None:
    """The ``subnormal`` measurement of the module docstring; None without the cached run.

    Weight decay shrinks the weights of dead neurons geometrically; products of them fall below
    the smallest normal float32 (1.2e-38), where x86 arithmetic is many times slower. One thread,
    so that switching flush-to-zero on the calling thread covers all the work.
    """
    from ..engine import flush_denormals, sample_chunk
    from ..experiments import teacher_identification_config
    from ..experiments.cache import _load_entry, entry_path
    from ..models.fast_path import (
        fused_loss,
        inputs_neuron_major,
        pack_params,
        targets_neuron_major,
    )

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
    small = [GatedRNN(d, n_small, n_small, seed=derive_seed(seed + e, "student")) for e in range(E)]
    timers = {
        "engine": _train_timer([task], big, n_eng, "fast", warm, seed, dev),
        "reference": _train_timer([task], big, n_ref, "reference", warm, seed, dev),
        "batched": _train_timer([task] * E, small, n_bat, "fast", warm, seed, dev),
    }
    for e, s in enumerate(small):  # the sequential runs: member e alone, its own data seed
        timers[f"run {e}"] = _train_timer([task], [s], n_seq, "fast", warm, seed + e, dev)
    best = _fastest(timers, REPEATS[kind])
    t_eng, t_ref, t_bat = best["engine"], best["reference"], best["batched"]
    t_seq = sum(best[f"run {e}"] for e in range(E))
    flops = step_flops(d, n, n, T, B)
    peak = gemm_peak_gflops(GEMM_SIZE[kind], device=dev)
    floor = products_floor(d, n, n, T, B, repeats=FLOOR_REPEATS[kind], device=dev)
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
        "products_floor_ms": floor["ms"],
        "products": floor["products"],
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "hardware": hardware(dev),
        "steps_timed": {"engine": n_eng, "reference": n_ref, "batched": n_bat, "sequential": n_seq},
        "repeats": REPEATS[kind],
        "targets": dict(TARGETS),
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    out["engine_speedup"] = out["engine_steps_per_s"] / out["reference_steps_per_s"]
    # the reference's step over the engine's products alone: the most any engine issuing
    # these products could gain here
    out["engine_speedup_bound"] = 1e3 / out["reference_steps_per_s"] / floor["ms"]
    out["ensemble_speedup"] = out["batched_steps_per_s"] / out["sequential_steps_per_s"]
    out["peak_fraction"] = out["engine_gflops"] / peak
    out["targets_met"] = {k: out[k] >= v for k, v in TARGETS.items()}
    out["subnormal"] = subnormal_cost(30 if kind == "quick" else 3) if on_cpu else None
    return out


def recorded_benches() -> dict[str, dict]:
    """Bench results measured on hardware this machine may not have (a GPU), shipped with the
    package as ``recorded/bench-<name>.json``: what ``run_bench`` returned there, plus a
    "provenance" entry (commit, command, how it ran). By name; a file that is not such a
    result is an error naming it."""
    from ..experiments.recorded_runs import RECORDED_ROOT

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
    from ..report.scorecard import build_dir

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
        *_floor_rows(r),
        ("torch, threads", f"{r['torch_version']}, {r['threads']}"),
        *_device_rows(r),
        *_subnormal_rows(r.get("subnormal"), r.get("device", "cpu")),
        ("cpu", f"{r['hardware']['cpu']} ({r['hardware']['cpu_count']} cores)"),
    ]
    width = max(len(a) for a, _ in rows)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in rows)


def _floor_rows(r: dict) -> list[tuple[str, str]]:
    """The products-only floor of a step and the speed-up bound (absent in older benches)."""
    if "products_floor_ms" not in r:
        return []
    ms = r["products_floor_ms"]
    return [
        ("step's products alone (floor)", f"{ms:.2f} ms per step, each timed on its own"),
        (
            "  reference step / floor",
            f"{r['engine_speedup_bound']:.1f}x (the most an engine "
            "issuing these products can gain here)",
        ),
    ]


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
    """Command line: ``python -m gated_attention.tools.bench [--out FILE] [--profile quick|smoke]
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
        atomic_write_json(args.out, results, indent=1)
        print(f"written: {args.out}")
    return results


if __name__ == "__main__":
    main()
