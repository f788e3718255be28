"""Jobs side by side, measured: how much faster K small jobs train at once on one device than
one after another.

``side_by_side_speedup`` trains K jobs of one family (``family_bench``'s setting: an ensemble of
3 at about 3,000 parameters, T = 8; "gated" through the engine's fused path, every other
family through its ``forward``), K at once by ``experiments.side_by_side.run_side_by_side``,
against one job alone:

    speedup(K) = K x t(one job alone) / t(K jobs at once)

On a GPU each job runs in a thread of its own that sends its work to a CUDA stream of its own;
K jobs whose kernels overlap perfectly give K, jobs that wait for each other (the host's
launches under one interpreter lock, or a device already full) give 1. On a CPU the same calls
run one after another (its cores already work for one job), so the speedup there is 1 by
construction, and ``make bench`` measures it on a GPU only. ``overlap`` measures the fused
path and a family's forward: the first replays a CUDA graph, the second launches its kernels
one by one from the host.

A recorded GPU bench that has these numbers lets ``gpu_plan`` predict the runs of several
jobs side by side (``gpu_plan.plan(side_by_side=K)``); without them it predicts the jobs one
after another.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from gated_attention.experiments.side_by_side import run_side_by_side
from gated_attention.models.family_registry import FAMILIES, width_for
from gated_attention.tasks.teacher_student import TeacherStudentTask
from lab.family_bench import FAMILY_SETUP, family_timer

__all__ = ["OVERLAP_FAMILIES", "speedup", "side_by_side_speedup", "overlap"]

#: the paths measured: the fused step of Eq. (2) (a CUDA graph on a GPU) and a family of
#: Fig. 4A through its forward (eager kernels)
OVERLAP_FAMILIES = ("gated", "lstm")


def _jobs(name: str, K: int, steps: int, seed: int, dev: torch.device) -> list[Callable]:
    """K independent jobs of family ``name``, each training its own ensemble ``steps`` steps
    (warmed up once here, untimed)."""
    s = FAMILY_SETUP
    task = TeacherStudentTask.from_seed(s["d"], seed=seed, T=s["T"])
    width = width_for(FAMILIES[name], s["d"], s["d"], s["target_params"])
    return [family_timer(task, name, width, steps, 2, seed + k, dev)[1] for k in range(K)]


def speedup(
    jobs: list[Callable], sizes: tuple[int, ...], device: torch.device, threads: bool | None
) -> dict[int, float]:
    """{K: K x t(1) / t(K)} for the first K of ``jobs`` run K at once (``run_side_by_side``),
    each time the best of two; ``sizes`` start at 1."""
    if not sizes or sizes[0] != 1 or max(sizes) > len(jobs):
        raise ValueError(f"sizes {sizes} must start at 1 and need at most {len(jobs)} jobs")

    def seconds(K: int) -> float:
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            run_side_by_side(jobs[:K], K, device, threads=threads)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            best = min(best, time.perf_counter() - t0)
        return best

    times = {K: seconds(K) for K in sizes}
    return {K: K * times[1] / t for K, t in times.items()}


def side_by_side_speedup(
    name: str,
    sizes: tuple[int, ...] = (1, 4, 16),
    steps: int = 50,
    seed: int = 0,
    device: str | torch.device = "cpu",
    *,
    threads: bool | None = None,
) -> dict[int, float]:
    """``speedup`` (module docstring) of jobs of family ``name`` on ``device``, ``steps`` steps
    each. ``threads``: as ``run_side_by_side`` (None: on a GPU)."""
    dev = torch.device(device)
    return speedup(_jobs(name, max(sizes), steps, seed, dev), sizes, dev, threads)


def overlap(kind: str, seed: int, device: torch.device) -> dict[str, dict[int, float]]:
    """``side_by_side_speedup`` of each of ``OVERLAP_FAMILIES`` at the bench's ``kind`` ("smoke":
    a few steps, K up to 2)."""
    sizes, steps = ((1, 2), 3) if kind == "smoke" else ((1, 4, 16), 50)
    return {
        name: side_by_side_speedup(name, sizes, steps, seed, device) for name in OVERLAP_FAMILIES
    }
