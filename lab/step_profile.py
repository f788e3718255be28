"""Where one engine step's time goes, measured part by part, and the floor of Eq. (2)'s products.

``make bench`` reports the engine's steps/s; this module says why it is not faster. At the bench
config (one student), on the device of the bench:

    data         drawing a chunk of batches (``engine.data``), per step
    loss         forward + backward of the fused loss (``fast_path.fused_loss``), per step
    optimiser    the engine's optimiser step (fused AdamW) and its schedule, per step
    products     every matrix product of the forward + backward, each timed alone
                 (``bench_products.products_floor``), grouped by the part of Eq. (2) it computes:
                 input gating (inner dimension d + 1), the scan (T x T decay matrices), output
                 gating (2m x n), readout (d_out x m)
    other        a whole training step minus data, loss and optimiser: the loop's bookkeeping

    eq2_floor    the products that every implementation of Eq. (2)'s step must run, whatever its
                 layout or scan: output gating and readout (forward and both gradients), timed
                 alone. A step cannot take less than this on this machine at this GEMM speed;
                 the input gating and the scan can be written other ways (a loop scan, quadratic
                 features), so they are left out of this floor.

Each part is the fastest of ``repeats`` timings (``bench_timing``).
"""

from __future__ import annotations

import torch

from gated_attention.engine import TrainConfig, stack_students, train
from gated_attention.engine.data import sample_chunk_neuron_major
from gated_attention.engine.loop import optimiser
from gated_attention.experiments.profiles import derive_seed
from gated_attention.models.fast_path import fused_loss, inputs_neuron_major, pack_params
from gated_attention.models.gated_rnn import GatedRNN
from gated_attention.tasks.teacher_student import TeacherStudentTask
from lab.bench_products import products_floor
from lab.bench_timing import best_seconds

__all__ = ["product_part", "step_profile", "size_curve"]


def product_part(shapes: str, d: int, n: int, m: int, T: int, d_out: int) -> str:
    """The part of Eq. (2) a recorded product computes, from its operand shapes ("[1, 200, 100]
    x [1, 100, 2048]"): input gating, scan, output gating or readout."""
    dims = [
        int(v)
        for v in shapes.replace("[", " ").replace("]", " ").replace(",", " ").split()
        if v.strip().lstrip("-").isdigit() and v != "x"
    ]
    if d + 1 in dims:
        return "input gating"
    if dims.count(T) >= 2 and n * T not in dims:
        return "scan"
    if 2 * m in dims:
        return "output gating"
    if d_out in dims:
        return "readout"
    return "other"


def step_profile(
    d: int = 4,
    n: int = 100,
    T: int = 32,
    B: int = 64,
    repeats: int = 20,
    seed: int = 0,
    device: torch.device | None = None,
    steps: int = 200,
    E: int = 1,
) -> dict:
    """The parts of the module docstring, in milliseconds per step (and the products' list),
    for an ensemble of E students of n = m neurons (E = 1: one student)."""
    dev = torch.device("cpu") if device is None else device
    tasks = [
        TeacherStudentTask.from_seed(d, seed=derive_seed(seed + e, "teacher"), T=T)
        for e in range(E)
    ]
    students = [GatedRNN(d, n, n, seed=derive_seed(seed + e, "student")) for e in range(E)]
    params, _ = stack_students(students)
    gens = [torch.Generator().manual_seed(derive_seed(seed + e, "data")) for e in range(E)]
    chunk = 50
    draw = lambda: sample_chunk_neuron_major(tasks, gens, chunk, B, torch.float32)  # noqa: E731
    data_ms = 1e3 * best_seconds(draw, 3, dev) / chunk
    loss_ms, opt_ms = _loss_and_optimiser_ms(params, d, T, B, E, seed, repeats, dev)
    total_ms = _train_ms(tasks, params, seed, steps, dev)
    floor = products_floor(d, n, n, T, B, repeats=repeats, device=dev, E=E)
    parts: dict[str, float] = {}
    for shapes, _, ms in floor["products"]:
        part = product_part(shapes, d, n, n, T, d)
        parts[part] = parts.get(part, 0.0) + ms
    return {
        "config": {"d": d, "n": n, "T": T, "batch": B, "ensemble": E},
        "step_ms": total_ms,
        "data_ms": data_ms,
        "loss_ms": loss_ms,
        "optimiser_ms": opt_ms,
        "other_ms": max(0.0, total_ms - data_ms - loss_ms - opt_ms),
        "products_ms": parts,
        "loss_minus_products_ms": max(0.0, loss_ms - floor["ms"]),
        "eq2_floor_ms": parts.get("output gating", 0.0) + parts.get("readout", 0.0),
    }


def _loss_and_optimiser_ms(params, d, T, B, E, seed, repeats, dev) -> tuple[float, float]:
    """(loss, optimiser): ms of the fused loss's forward + backward on a fixed batch, and of
    the engine's own optimiser step (``engine.loop.optimiser``: fused AdamW, its schedule)."""
    g = torch.Generator().manual_seed(seed)
    P = {k: v.float().to(dev).requires_grad_(True) for k, v in pack_params(params).items()}
    X = inputs_neuron_major(torch.randn(E, B, T, d, generator=g)).to(dev)
    Y = torch.randn(E, d, T * B, generator=g).to(dev)
    loss_step = lambda: fused_loss(X, P, Y, T, None).sum().backward()  # noqa: E731
    loss_ms = 1e3 * best_seconds(loss_step, repeats, dev)
    opt, sched = optimiser(P, TrainConfig(steps=10**6), ("nu",))

    def opt_step() -> None:
        opt.step()
        sched.step()

    return loss_ms, 1e3 * best_seconds(opt_step, repeats, dev)


def _train_ms(tasks, params, seed: int, steps: int, dev) -> float:
    """ms per step of ``engine.train`` (mode "fast"), the fastest of three runs of ``steps``
    steps after a warm-up run."""
    seeds = [derive_seed(seed + e, "data") for e in range(len(tasks))]
    kw = dict(data_seeds=seeds, progress=False, device=dev)
    train(tasks, params, TrainConfig(steps=20, chunk_steps=20), **kw)  # warm-up
    run = lambda: train(tasks, params, TrainConfig(steps=steps, log_every=steps), **kw)  # noqa: E731
    return 1e3 * min(best_seconds(run, 1, dev) for _ in range(3)) / steps


def size_curve(
    sizes=(16, 32, 48, 64, 100, 128),
    d: int = 4,
    T: int = 32,
    B: int = 64,
    steps: int = 100,
    seed: int = 0,
    device: torch.device | None = None,
) -> list[tuple[int, float]]:
    """[(n, engine steps/s)] of one student of n = m neurons at the bench config: the fastest of
    three timed runs of ``steps`` steps each, per size."""
    dev = torch.device("cpu") if device is None else device
    task = TeacherStudentTask.from_seed(d, seed=derive_seed(seed, "teacher"), T=T)
    kw = dict(data_seeds=[derive_seed(seed, "data")], progress=False, device=dev)
    out = []
    for n in sizes:
        params, _ = stack_students([GatedRNN(d, n, n, seed=derive_seed(seed, "student"))])
        train([task], params, TrainConfig(steps=10, chunk_steps=10), **kw)  # warm-up
        best = min(
            best_seconds(
                lambda p=params: train([task], p, TrainConfig(steps=steps, log_every=steps), **kw),
                1,
                dev,
            )
            for _ in range(3)
        )
        out.append((int(n), steps / best))
    return out
