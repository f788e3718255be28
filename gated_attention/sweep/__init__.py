"""Sweeps: experiments' jobs on a Dask cluster, through the package's one runner
(``experiments.runner``), into the very entries a local ``cache.run(config)`` writes.

    Cluster   the runner's Dask executor: each task on a worker that first checks its code
    connect   a client of a local cluster or of a running scheduler
    sweep     the entries of configs: ``runner.run_all`` on a Cluster

An entry made here is the local run's, number for number (same thread count and hardware), its
meta with a "sweep" field: where each job trained. A worker with other code
(``CodeHashMismatchError``) stops the sweep at once; a job that keeps failing is named once the
others are done (``SweepError``), its checkpoint kept. Shared storage and GPUs: book/reference.md,
"Running the paper profile on a cluster".
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from distributed import Client, Future, LocalCluster, as_completed, get_worker
from distributed.scheduler import KilledWorker

from ..engine import DEVICE_ENV, flush_denormals, hardware, resolve_device
from ..engine.device import keep_freed_memory
from ..experiments.cache import RunResult, code_hash
from ..experiments.runner import Task, run_all, say, train

#: how many times Dask runs a job again after it raised (a worker that died is another count:
#: distributed.scheduler.allowed-failures)
DEFAULT_RETRIES = 2
#: seconds to wait for a scheduler to answer
DEFAULT_TIMEOUT = 30.0


class SweepError(RuntimeError):
    """A sweep cannot go on (the message says why and what to do)."""


class SchedulerUnreachableError(SweepError):
    """No scheduler answered at the address given."""


class CodeHashMismatchError(SweepError):
    """A worker's code is not the client's: its ``code_hash()`` differs."""

    def __init__(self, worker_hash: str, client_hash: str, where: str, job: str) -> None:
        super().__init__(worker_hash, client_hash, where, job)  # pickled with these args
        self.worker_hash, self.client_hash = worker_hash, client_hash

    def __str__(self) -> str:
        mine, client, where, job = self.args
        return (
            f"worker {where} runs other code than the client: its code hash is {mine}, the "
            f"client's is {client}. Job {job!r} was not trained. Every worker must import the "
            "same gated_attention source as the client (same commit, same uncommitted edits); "
            "reinstall it there, or restart the workers after a change."
        )


def worker_address() -> str | None:
    """The address of the worker running this code, or None outside a worker."""
    try:
        return get_worker().address
    except ValueError:
        return None


def on_worker(task: Task, code: str, device: str) -> tuple[Any, dict | None]:
    """What a worker runs: check its code against the client's ``code``, then ``train`` the task
    on ``device``; (output, where it ran), (None, None) for a task past its deadline."""
    mine = code_hash(config=task.config)
    if mine != code:
        where = f"{socket.gethostname()} ({worker_address() or 'this process'})"
        raise CodeHashMismatchError(mine, code, where, task.name)
    if task.done is not None and not task.done.parent.is_dir():
        raise SweepError(
            f"the results entry {task.done.parent} does not exist on this worker: the cache "
            "directory must be shared storage, at the same path on the client and every worker"
        )
    flush_denormals()  # per thread: this worker thread is not the one that imported the package
    keep_freed_memory()
    found = checkpoints(task)
    t0 = time.perf_counter()
    with on_device(device):
        out = train(task)
    if out is None:
        return None, None
    dev = resolve_device(device)
    where = {
        "job": task.job.key,
        "host": socket.gethostname(),
        "worker": worker_address(),
        "pid": os.getpid(),
        "device": str(dev),
        "code_hash": mine,
        "hardware": hardware(dev),
        "wall_time_s": time.perf_counter() - t0,
        "checkpoints_found": [p.name for p in found],
    }
    if dev.type == "cuda":
        where["device_name"] = torch.cuda.get_device_name(dev)
    if isinstance(out, dict) and "resumed_from" in out:
        where["resumed_from_step"] = int(out["resumed_from"])
    return out, where


def checkpoints(task: Task) -> list:
    """The checkpoint files of ``task`` that exist now (``<key>.pt``, ``<key>.<part>.pt``)."""
    ck = task.checkpoint
    return [] if ck is None else sorted(ck.parent.glob(f"{task.job.key}.*pt"))


def task_key(task: Task) -> str:
    """The task's key on the cluster: experiment, job and a tag of where its output goes (the
    same entry in two caches is two tasks), readable in the cluster's logs."""
    tag = hashlib.sha256(str(task.done).encode()).hexdigest()[:8]
    return f"{task.config.name}-{task.job.key}-{tag}"


@dataclass
class Cluster:
    """The runner's executor on the Dask cluster of ``client`` (``submit``), each task tried
    ``retries`` times again after an error; one line to ``echo`` per finished job."""

    client: Client
    device: str = "cpu"
    retries: int = DEFAULT_RETRIES
    echo: Callable[[str], None] = say

    def submit(self, tasks: Sequence[Task]) -> list[Future]:
        """Every task on the cluster, the first with the highest priority (a "cuda" ``device``:
        each needs the worker resource ``GPU``)."""
        resources = {"GPU": 1} if self.device.startswith("cuda") else None
        codes = {id(t.config): code_hash(config=t.config) for t in tasks}  # the client's
        futures = [
            self.client.submit(
                on_worker, dataclasses.replace(task, progress=False), codes[id(task.config)],
                self.device, key=task_key(task), retries=self.retries, pure=False,
                resources=resources, priority=len(tasks) - n,
            )
            for n, task in enumerate(tasks)
        ]  # fmt: skip
        workers = self.client.scheduler_info().get("workers", {}).values()
        if resources and futures and not any(w.get("resources", {}).get("GPU") for w in workers):
            self.echo("no worker declares the resource GPU yet: the jobs wait for one")
        return futures

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[int, Any, dict | None]]:
        futures = self.submit(tasks)
        index = {fut.key: n for n, fut in enumerate(futures)}
        failures = []
        try:
            for done, fut in enumerate(as_completed(futures), start=1):
                task = tasks[index[fut.key]]
                if fut.status == "finished":
                    out, where = fut.result()
                    if where is not None:
                        self.echo(f"[{done}/{len(futures)}] {job_line(task, where)}")
                    yield index[fut.key], out, where
                    continue
                exc = fut.exception() if fut.status == "error" else None
                if isinstance(exc, CodeHashMismatchError):
                    raise exc
                failures.append(failure(task, exc, self.retries))
                self.echo(f"[{done}/{len(futures)}] FAILED {failures[-1]}")
        except BaseException:
            self.client.cancel(futures)  # the finished jobs' outputs and every checkpoint stay
            raise
        if failures:
            raise SweepError(
                "jobs failed:\n  " + "\n  ".join(failures)
                + "\nevery other job's output is saved; run the sweep again to finish"
            )  # fmt: skip


def job_line(task: Task, where: dict) -> str:
    resumed = ""
    if where["checkpoints_found"]:
        step = where.get("resumed_from_step")
        resumed = f", resumed from step {step}" if step else ", resumed from its checkpoint"
    return (
        f"{task.name}: trained in {where['wall_time_s']:.1f} s on {where['host']} "
        f"({where['worker'] or 'no worker'}, {where['device']}){resumed}"
    )


def failure(task: Task, exc: BaseException | None, retries: int) -> str:
    """What to tell about a job that failed for good (``exc`` None: cancelled)."""
    where = f"{task.name} (task {task_key(task)})"
    kept = ", ".join(str(p) for p in checkpoints(task)) or "none written yet"
    if exc is None:
        return f"{where}: cancelled on the cluster"
    if isinstance(exc, KilledWorker):
        last = getattr(exc.last_worker, "address", exc.last_worker)
        return (
            f"{where}: the {exc.allowed_failures + 1} workers that ran it all died (the last: "
            f"{last}); checkpoints kept: {kept}. Run the sweep again to resume it (see the "
            "workers' logs: out of memory? killed by the batch system?)"
        )
    return f"{where}: {type(exc).__name__}: {exc} (tried {retries + 1} times; checkpoints: {kept})"


def sweep(
    configs: Sequence[Any],
    client: Client,
    *,
    device: str = "cpu",
    retries: int = DEFAULT_RETRIES,
    echo: Callable[[str], None] = say,
) -> list[RunResult]:
    """The entries of ``configs`` (``cache.run``'s, in order), their jobs trained on the cluster
    of ``client``."""
    return run_all(configs, Cluster(client, device, retries, echo), progress=False, echo=echo)


def default_workers() -> int:
    """The number of CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextmanager
def connect(
    scheduler: str | None = None,
    *,
    workers: int | None = None,
    gpu: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> Iterator[Client]:
    """A client of the scheduler at ``scheduler`` (unreachable within ``timeout`` s: a
    ``SchedulerUnreachableError``), else of a local cluster on loopback of ``workers`` processes
    (default: this process's cores), one thread each, each with resource ``GPU: 1`` if ``gpu``."""
    if scheduler is None:
        n = workers if workers is not None else default_workers()
        if n < 1:
            raise ValueError(f"a local cluster needs at least one worker, not {n}")
        extra = {"resources": {"GPU": 1}} if gpu else {}
        with (
            LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                **extra,
            ) as cluster,
            Client(cluster) as client,
        ):  # fmt: skip
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


@contextmanager
def on_device(device: str) -> Iterator[None]:
    """$GATED_ATTENTION_DEVICE = ``device`` inside, where training takes its device from (a
    worker runs one job at a time: one thread per worker)."""
    old = os.environ.get(DEVICE_ENV)
    os.environ[DEVICE_ENV] = device
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(DEVICE_ENV, None)
        else:
            os.environ[DEVICE_ENV] = old
