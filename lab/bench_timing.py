"""How the bench times: the fastest of several runs, taken in turns, on torch's benchmark clock.

    seconds       one timed call on ``torch.utils.benchmark.timer`` (it waits for an
                  accelerator's queued work: CUDA runs asynchronously)
    best_seconds  one untimed warm-up call, then the fastest of ``repeats`` timed calls
    fastest       the fastest of ``repeats`` timings of each of several timers, in turns

The fastest run is the least disturbed one: a moment of other work on the machine does not
decide the number. Taking turns (one round runs every timer once) makes a slow stretch of the
machine fall on every measurement alike. ``torch.utils.benchmark.Timer`` itself is not used:
it warms up before each measurement and takes no turns between rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils import benchmark

__all__ = ["seconds", "best_seconds", "fastest"]


def seconds(fn: Callable[[], object], dev: torch.device | None = None) -> float:
    """Seconds of one call of ``fn``, until an accelerator's queued work is done (``dev`` is
    kept for the callers' sake: torch's clock waits for whichever accelerator there is)."""
    t0 = benchmark.timer()
    fn()
    return benchmark.timer() - t0


def best_seconds(fn: Callable[[], object], repeats: int, dev: torch.device) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``fn`` on ``dev``, after one untimed call."""
    seconds(fn, dev)  # warm-up
    return min((seconds(fn, dev) for _ in range(repeats)), default=float("inf"))


def fastest(timers: dict[Any, Callable[[], float]], repeats: int) -> dict[Any, float]:
    """The fastest of ``repeats`` timings of each timer (a function returning seconds), taken in
    turns: one round runs every timer once."""
    best = {k: float("inf") for k in timers}
    for _ in range(repeats):
        for k, timed in timers.items():
            best[k] = min(best[k], timed())
    return best
