"""A run's device time on the recorded GPU, predicted from its counted kernels and FLOPs.

A training step on a GPU costs at least the larger of two times:

    launch-bound      kernels x ``t_kernel``: every operation is a kernel of a few microseconds,
                      however little it computes (the networks here are small);
    arithmetic-bound  FLOPs / the GPU's measured matrix-multiply peak (``gemm_peak_gflops``).

Both counts are measured here, on the CPU, on the run's own step: ``job_run`` runs an
experiment's job inside ``engine.probing()``, which stops it at its first ``train`` call with
that call's arguments (tasks, parameters, config, seeds, forward); ``step_counts`` then trains
that run for k and for 2k steps (mode "fast", the mode the GPU runs replay as a CUDA graph)
and takes the difference, over k: the operations dispatched per step (each a kernel on a GPU,
the data drawn a chunk at a time on the device included) and the FLOPs per step
(``torch.utils.flop_counter``: matrix products, forward and backward). Steps of runs of the
same shapes are counted once.

``t_kernel`` is calibrated on the recorded GPU bench: its one-student step time at the bench's
config over the operations that step dispatches on the device (the data, drawn on the host
there, left out: ``bench_ways.dispatch_counts``). So the prediction is of today's fast step,
graphed as it was in that bench, with the data drawn on the device; a step fused further (mode
"compiled": ``bench_ways.compiled_kernels``) would launch fewer kernels than counted.

Glossary (code name -> meaning):
    t_kernel     seconds per kernel on the recorded GPU (launch-bound steps)
    peak_flops   FLOP/s of the recorded GPU's large float32 matmul (arithmetic-bound steps)
"""

from __future__ import annotations

import dataclasses
from typing import Any

from torch.utils.flop_counter import FlopCounterMode

from ..engine import TrainCall, probing, train
from .bench_ways import OpCounter, dispatch_counts

__all__ = ["job_run", "step_counts", "calibrate", "step_seconds", "run_key"]


def job_run(config: Any, job: Any) -> dict | None:
    """The arguments of the first ``train`` call of ``config``'s ``job``, stopped there
    (``engine.probing``); None for a job that trains nothing through the engine."""
    with probing():
        try:
            config.train_job(job, checkpoint=None, progress=False)
        except TrainCall as call:
            return call.arguments
    return None


def run_key(run: dict) -> tuple:
    """What a step's counts depend on: the parameters' shapes, the model, T, the batch, the
    loss and the data."""
    c, task = run["config"], run["tasks"][0]
    shapes = tuple(sorted((k, tuple(v.shape)) for k, v in run["params"].items()))
    forward = getattr(run["forward"], "__qualname__", repr(run["forward"]))
    return shapes, forward, task.T, type(task).__name__, c.batch_size, c.loss, c.dtype, c.mode


def _count(run: dict, steps: int, chunk: int) -> tuple[int, float]:
    """(operations dispatched, FLOPs) of ``run`` trained ``steps`` steps, data in chunks of
    ``chunk`` steps, on this CPU in mode "fast"."""
    tc = dataclasses.replace(
        run["config"], steps=steps, log_every=steps, chunk_steps=chunk, checkpoint_every=0,
        warmup_steps=0, mode="fast",
    )  # fmt: skip
    with OpCounter() as ops, FlopCounterMode(display=False) as flops:
        train(
            run["tasks"], run["params"], tc, data_seeds=run["data_seeds"], masks=run["masks"],
            no_decay=run["no_decay"], forward=run["forward"], progress=False, device="cpu",
        )  # fmt: skip
    return sum(ops.ops.values()), flops.get_total_flops()


def step_counts(run: dict, steps: int = 1) -> dict:
    """{"kernels", "flops", "step_kernels", "chunk_kernels"} of one steady-state step of
    ``run`` (a ``job_run`` result), counted on this CPU in mode "fast": a step's own
    operations (a run of 2k steps minus one of k, each one chunk of data: the drawing cancels),
    and those of drawing one chunk of data (2k steps in two chunks minus in one), spread over
    the run's ``chunk_steps``. An uncounted run first fills the caches of a first run."""
    k = steps
    _count(run, k, k)
    one, two, split = _count(run, k, k), _count(run, 2 * k, 2 * k), _count(run, 2 * k, k)
    step_kernels = (two[0] - one[0]) / k
    chunk_kernels = split[0] - two[0]
    return {
        "kernels": step_kernels + chunk_kernels / run["config"].chunk_steps,
        "flops": (two[1] - one[1]) / k,
        "step_kernels": step_kernels,
        "chunk_kernels": chunk_kernels,
    }


def calibrate(bench: dict) -> dict:
    """{"t_kernel", "peak_flops", "kernels"} from a recorded GPU bench: its one-student step
    time over the device operations of that step (data excluded), and its matmul peak."""
    cfg = bench["config"]
    if cfg["n"] != cfg["m"] or (cfg["d"], cfg["T"], cfg["batch"]) != (4, 32, 64):
        raise ValueError(f"the bench's config {cfg} is not the one dispatch_counts counts")
    (row,) = dispatch_counts(sizes=(1,), n=cfg["n"])
    kernels = row["ops_per_step"] - row["data_ops_per_step"]
    return {
        "t_kernel": 1.0 / bench["engine_steps_per_s"] / kernels,
        "peak_flops": bench["gemm_peak_gflops"] * 1e9,
        "kernels": kernels,
    }


def step_seconds(counts: dict, calibration: dict) -> dict:
    """{"launch", "arithmetic", "step"}: seconds of one step on the calibrated GPU."""
    launch = counts["kernels"] * calibration["t_kernel"]
    arithmetic = counts["flops"] / calibration["peak_flops"]
    return {"launch": launch, "arithmetic": arithmetic, "step": max(launch, arithmetic)}
