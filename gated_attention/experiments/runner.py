"""One way to run experiments' jobs (``protocol``): the runner and its interchangeable executors.

    compute(config, checkpoint=...)   one experiment's (tensors, metrics): ``cache.run`` calls it
    run_all(configs, executor, budget_s=...)   a campaign's entries

Executors, each ``run(tasks)`` yielding ``(index, output, where)`` as tasks finish:
    InProcess(device)       one after another in this process: the reference numbers
    Streams(n, device)      up to ``n`` at once on one GPU, each on its own CUDA stream
                            (``side_by_side``); on a CPU, or n = 1, InProcess's order
    sweep.Cluster(client)   a Dask cluster: a LocalCluster, a scheduler, a SLURMCluster

Every executor makes the same entry, number for number (same hardware and thread count).
Resuming: with a ``checkpoint`` path, job ``key`` checkpoints to ``<key>.pt`` beside it and
keeps its output in ``<key>-done.pt`` until the entry is assembled, so an interrupted run
trains only its unfinished jobs. A failing job's error carries a note naming the job.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from ..atomic import atomic_write
from ..engine import resolve_device
from . import cache
from .side_by_side import run_side_by_side, side_by_side

Echo = Callable[[str], None]


def say(line: str) -> None:
    print(line, flush=True)


@dataclass(frozen=True)
class Task:
    """One job to train: ``job`` of ``config``, checkpointing to ``checkpoint``, its output kept
    in ``done`` (None: kept nowhere), not started after ``deadline`` (``time.time()``)."""

    config: Any
    job: Any  # protocol.Job
    checkpoint: Path | None = None
    done: Path | None = None
    progress: bool = True
    deadline: float | None = None

    @property
    def name(self) -> str:
        return f"{self.config.name} {self.job.label}"


def train(task: Task) -> Any:
    """Train ``task`` here; its output, kept in ``task.done`` (its checkpoint then removed).
    The output an earlier try kept, if any; None once its deadline has passed."""
    if task.done is not None and task.done.exists():
        return torch.load(task.done, weights_only=True)
    if task.deadline is not None and time.time() > task.deadline:
        return None
    try:
        out = task.config.train_job(task.job, checkpoint=task.checkpoint, progress=task.progress)
    except Exception as err:
        err.add_note(f"in job {task.job.key!r} ({task.job.label}) of {task.config.name}")
        raise
    if task.done is not None:
        atomic_write(task.done, lambda p: torch.save(out, p))
    if task.checkpoint is not None:
        task.checkpoint.unlink(missing_ok=True)
    return out


class Executor(Protocol):
    """Runs ``train`` of each task on a ``device``; yields (index, output, where or None)."""

    device: str

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[int, Any, dict | None]]: ...


@dataclass
class InProcess:
    """The tasks one after another in this process, in order; an error stops the run."""

    device: str = field(default_factory=lambda: resolve_device(None).type)

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[int, Any, dict | None]]:
        for i, task in enumerate(tasks):
            yield i, train(task), None


@dataclass
class Streams:
    """Up to ``n`` tasks at once (default $GATED_ATTENTION_SIDE_BY_SIDE, else 1), each on its
    own CUDA stream (``side_by_side.run_side_by_side``, ``threads`` as there)."""

    n: int = field(default_factory=side_by_side)
    device: str = "cuda"
    threads: bool | None = None

    def run(self, tasks: Sequence[Task]) -> Iterator[tuple[int, Any, dict | None]]:
        calls = [functools.partial(train, task) for task in tasks]
        outs = run_side_by_side(calls, self.n, self.device, threads=self.threads)
        yield from ((i, out, None) for i, out in enumerate(outs))


@dataclass
class Plan:
    """One experiment of a run: its jobs, the outputs in so far (by job index), the tasks
    still to train, and where each ran (where the executor says)."""

    config: Any
    jobs: list
    outputs: dict[int, Any]
    todo: list[tuple[int, Task]]
    checkpoint: Path | None = None
    where: dict[int, dict] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return len(self.outputs) == len(self.jobs)

    def finish(self) -> tuple[dict, dict]:
        """The experiment's ``assemble`` of every output; then its kept outputs removed."""
        outputs = [self.outputs[k] for k in range(len(self.jobs))]
        result = self.config.assemble(self.jobs, outputs)
        if self.checkpoint is not None:
            for job in self.jobs:
                self.checkpoint.with_name(f"{job.key}-done.pt").unlink(missing_ok=True)
        return result


def plan(
    config: Any,
    device: str,
    checkpoint: str | Path | None = None,
    *,
    progress: bool = True,
    deadline: float | None = None,
) -> Plan:
    """The plan of ``config`` on ``device``, with the outputs an earlier run kept beside
    ``checkpoint``."""
    jobs = config.jobs(device)
    keys = [job.key for job in jobs]
    if not jobs or len(set(keys)) != len(keys):
        raise ValueError(f"{type(config).__name__}.jobs must give distinct job keys, got {keys}")
    path = None if checkpoint is None else Path(checkpoint)
    outputs, todo = {}, []
    for k, job in enumerate(jobs):
        ck = done = None
        if path is not None:
            ck, done = path.with_name(f"{job.key}.pt"), path.with_name(f"{job.key}-done.pt")
        if done is not None and done.exists():
            outputs[k] = torch.load(done, weights_only=True)
        else:
            todo.append((k, Task(config, job, ck, done, progress, deadline)))
    return Plan(config, jobs, outputs, todo, path)


def execute(
    plans: Sequence[Plan], executor: Executor, *, progress: bool = True, echo: Echo = say
) -> Iterator[int]:
    """Train every plan's tasks on ``executor``, in order; yields a plan's index once its last
    output is in. A task past its deadline leaves its plan incomplete, never yielded."""
    for i, p in enumerate(plans):
        if p.complete:
            yield i
    tasks = [(i, k, task) for i, p in enumerate(plans) for k, task in p.todo]
    total = sum(len(p.jobs) for p in plans)
    t0, ran = time.perf_counter(), 0
    for n, out, where in executor.run([task for _, _, task in tasks]):
        i, k, _ = tasks[n]
        if out is None:  # not started: its deadline had passed
            continue
        plans[i].outputs[k] = out
        if where is not None:
            plans[i].where[k] = where
        ran += 1
        if progress and total > 1:
            now = total - len(tasks) + ran
            echo(overall_progress(now, total, ran, time.perf_counter() - t0))
        if plans[i].complete:
            yield i


def compute(
    config: Any,
    *,
    checkpoint: str | Path | None = None,
    progress: bool = True,
    device: str | None = None,
    jobs_at_once: int | None = None,
    executor: Executor | None = None,
) -> tuple[dict, dict]:
    """The (tensors, metrics) of ``config``: its plan through ``executor`` (default: on a GPU
    ``Streams(jobs_at_once)``, else ``InProcess``), resuming beside ``checkpoint``."""
    if executor is None:
        device = resolve_device(device).type if device is None else device
        n = side_by_side() if jobs_at_once is None else jobs_at_once
        executor = Streams(n, device) if n > 1 else InProcess(device)
    p = plan(config, executor.device, checkpoint, progress=progress)
    for _ in execute([p], executor, progress=progress):
        pass
    return p.finish()


def run_all(
    configs: Sequence[Any],
    executor: Executor | None = None,
    *,
    budget_s: float | None = None,
    progress: bool = True,
    echo: Echo = say,
) -> list[cache.RunResult | None]:
    """The results entry (``cache.run``'s) of each of ``configs``, computing those not cached on
    ``executor`` (default ``InProcess()``), in the order given (put the central claims first).

    No job starts after ``budget_s`` seconds (an unfinished experiment is None; the next call
    trains only the rest). Each entry is written as soon as its last job is in. A failing job
    stops an in-process run; a cluster reports every failed job, by name, at the end."""
    executor = InProcess() if executor is None else executor
    deadline = None if budget_s is None else time.time() + budget_s
    results: list[cache.RunResult | None] = [None] * len(configs)
    plans, entries = [], []
    t0 = time.perf_counter()
    for i, config in enumerate(configs):
        code, path, found = cache.open_entry(config)
        if found is not None:
            echo(f"{config.name}: entry complete already, nothing to train: {path}")
            results[i] = found
            continue
        ck = path / "checkpoint.pt"
        plans.append(plan(config, executor.device, ck, progress=progress, deadline=deadline))
        entries.append((i, code, path))
        if plans[-1].outputs:
            found_jobs = len(plans[-1].outputs)
            echo(f"{config.name}: {found_jobs} job(s) finished earlier, not trained again")
    for j in execute(plans, executor, progress=progress, echo=echo):
        i, code, path = entries[j]
        p = plans[j]
        tensors, metrics = p.finish()
        extra = {}
        if p.where:  # where the jobs ran, when the executor says (a cluster's workers)
            records = [p.where[k] for k in sorted(p.where)]
            extra = {"hardware": records[0]["hardware"], "sweep": {"jobs": records}}
        wall = time.perf_counter() - t0
        results[i] = cache.store(p.config, path, code, tensors, metrics, wall, extra)
        echo(f"{p.config.name}: entry written: {path}")
    for p in plans:
        if not p.complete:
            left = len(p.jobs) - len(p.outputs)
            echo(f"{p.config.name}: {left} job(s) left for a later run (the budget ran out)")
    return results


def overall_progress(done: int, total: int, ran: int, elapsed: float) -> str:
    """One line on the whole run: jobs done, time so far, and the rest at the mean pace of the
    ``ran`` jobs of this call (jobs differ in cost: a rough figure)."""
    left = (total - done) * elapsed / max(ran, 1)
    return (
        f"jobs {done}/{total} done; {elapsed / 60:.1f} min so far, about "
        f"{left / 60:.1f} min left at this pace"
    )
