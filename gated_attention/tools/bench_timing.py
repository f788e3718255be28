"""How the bench times: the fastest of several runs, taken in turns, on a device that may queue.

    sync          wait for the device's queued work (CUDA runs asynchronously)
    seconds       one timed call, the device's queued work included
    best_seconds  one untimed warm-up call, then the fastest of ``repeats`` timed calls
    fastest       the fastest of ``repeats`` timings of each of several timers, in turns

The fastest run is the least disturbed one: a moment of other work on the machine does not
decide the number. Taking turns (one round runs every timer once) makes a slow stretch of the
machine fall on every measurement alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["sync", "seconds", "best_seconds", "fastest"]


def sync(dev: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously; a CPU has nothing queued)."""
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def seconds(fn: Callable[[], object], dev: torch.device | None = None) -> float:
    """Seconds of one call of ``fn``, until ``dev``'s queued work is done (None: the CPU)."""
    t0 = time.perf_counter()
    fn()
    if dev is not None:
        sync(dev)
    return time.perf_counter() - t0


def best_seconds(fn: Callable[[], object], repeats: int, dev: torch.device) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``fn`` on ``dev``, after one untimed call."""
    fn()  # warm-up
    sync(dev)
    return min((seconds(fn, dev) for _ in range(repeats)), default=float("inf"))


def fastest(timers: dict[Any, Callable[[], float]], repeats: int) -> dict[Any, float]:
    """The fastest of ``repeats`` timings of each timer (a function returning seconds), taken in
    turns: one round runs every timer once."""
    best = {k: float("inf") for k in timers}
    for _ in range(repeats):
        for k, timed in timers.items():
            best[k] = min(best[k], timed())
    return best
