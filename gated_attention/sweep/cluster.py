"""The Dask client of a sweep: a local cluster of worker processes, or a running scheduler.

What: ``connect(scheduler, workers=..., gpu=..., timeout=...)`` yields a ``distributed.Client``:
    no scheduler   a ``LocalCluster`` on this machine (loopback only): ``workers`` processes
                   (default: the CPU cores this process may use), one thread each, each
                   declaring the resource ``GPU: 1`` with ``gpu`` (they then share this
                   machine's current GPU); shut down on exit.
    an address     ``Client(address)`` of a running scheduler (``tcp://HOST:PORT``); one that
                   cannot be reached within ``timeout`` seconds is a ``SchedulerUnreachableError``.

Why one thread per worker: a job is one training run that keeps a core busy (torch runs one
thread per worker process); more jobs than cores only slow each other down.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from distributed import Client, LocalCluster

from .provenance import SweepError

__all__ = ["DEFAULT_TIMEOUT", "SchedulerUnreachableError", "connect", "default_workers"]

#: seconds to wait for a scheduler to answer
DEFAULT_TIMEOUT = 30.0


class SchedulerUnreachableError(SweepError):
    """No scheduler answered at the address given."""


def default_workers() -> int:
    """The number of CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def local_cluster(workers: int | None = None, gpu: bool = False) -> LocalCluster:
    """A cluster of ``workers`` processes on this machine, one thread each (see ``connect``)."""
    n = workers if workers is not None else default_workers()
    if n < 1:
        raise ValueError(f"a local cluster needs at least one worker, not {n}")
    extra = {"resources": {"GPU": 1}} if gpu else {}
    return LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        # no dashboard; the scheduler's own HTTP endpoints on any free port (not 8787, which
        # another cluster on this machine may hold)
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        **extra,
    )


@contextmanager
def connect(
    scheduler: str | None = None,
    *,
    workers: int | None = None,
    gpu: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> Iterator[Client]:
    """A client of a local cluster or of the scheduler at ``scheduler`` (see the docstring)."""
    if scheduler is None:
        with local_cluster(workers, gpu) as cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError) as err:
        raise SchedulerUnreachableError(
            f"no Dask scheduler answered at {scheduler} within {timeout:g} s ({err}); is it "
            "running, is the address the one it printed (tcp://HOST:PORT), and is its port "
            "reachable from here?"
        ) from None
    with client:
        yield client
