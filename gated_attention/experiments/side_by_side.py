"""Jobs side by side: several of an experiment's jobs at once on one GPU (``run_side_by_side``,
what the runner's ``Streams`` executor calls), each in its own thread on its own CUDA stream, so
that their kernels overlap. Jobs share nothing and the engine records CUDA graphs in thread-local
capture mode, so a job's numbers are those of the job alone.

Off on CUDA for now (``STREAMS_CHECKED``): on an H200 with torch 2.11 three jobs at once could
not record their CUDA graphs ("operation not permitted when stream is capturing") and one job's
loss became NaN (``tests/test_cuda.py``); until that check passes, the jobs run one after
another, with a warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

from ..engine.device import positive_env

SIDE_BY_SIDE_ENV = "GATED_ATTENTION_SIDE_BY_SIDE"
#: jobs at once on CUDA streams passed tests/test_cuda.py's check on a GPU (module docstring)
STREAMS_CHECKED = False
R = TypeVar("R")


def side_by_side() -> int:
    """How many jobs run at once on a GPU: $GATED_ATTENTION_SIDE_BY_SIDE, else 1."""
    return positive_env(SIDE_BY_SIDE_ENV, 1)


def run_side_by_side(
    calls: Sequence[Callable[[], R]],
    n: int,
    device: str | torch.device = "cpu",
    *,
    threads: bool | None = None,
) -> list[R]:
    """Each call's result, in order: up to ``n`` at once, each in its own thread and (on CUDA)
    on its own stream; ``threads`` None: threads only on CUDA (True on a CPU: how the tests check
    that no number changes). A call that raises does not stop the others; the first error in
    call order is raised once they have finished."""
    device = torch.device(device)
    cuda = device.type == "cuda"
    threads = cuda if threads is None else threads
    if cuda and n > 1 and len(calls) > 1 and not STREAMS_CHECKED:
        warnings.warn(
            f"{n} jobs at once on CUDA streams failed their check on a GPU (torch 2.11, H200): "
            f"the {len(calls)} jobs run one after another (experiments.side_by_side)",
            RuntimeWarning,
            stacklevel=2,
        )
        threads = False
    if n <= 1 or not threads or len(calls) <= 1:
        return [call() for call in calls]

    def on_own_stream(call: Callable[[], R]) -> R:
        if not cuda:
            return call()
        stream = torch.cuda.Stream(device)
        with torch.cuda.stream(stream):
            out = call()
        stream.synchronize()
        return out

    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="job") as pool:
        futures = [pool.submit(on_own_stream, call) for call in calls]
    return [future.result() for future in futures]  # the pool has waited for every job
