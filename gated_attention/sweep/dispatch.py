"""Submitting experiments' jobs to a Dask cluster and collecting them as they finish.

What: ``sweep(configs, client)`` plans the jobs of each experiment (``jobs.plan_jobs``), skips
an experiment whose entry is already complete and a job whose output exists, submits the rest
(``retries``; with ``device="cuda"`` each needs the worker resource ``GPU``), prints one line
per finished job (its wall time, host, worker and device) and writes each experiment's entry
once its last job has finished (``assemble.finish``). Returns the entries, as ``cache.run``.

Failures: a worker with other code (``CodeHashMismatchError``) stops the sweep at once, every other
job cancelled. A job that keeps failing, or whose workers keep dying (the scheduler reschedules
a job whose worker died, up to distributed.scheduler.allowed-failures times), is reported by
name once the other jobs are done; their entries are written, its checkpoint is kept, and a
second sweep resumes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributed import Client, Future, as_completed
from distributed.scheduler import KilledWorker

from ..experiments import cache
from .assemble import finish
from .jobs import Job, plan_jobs
from .provenance import CodeHashMismatchError, SweepError
from .worker import load_output, run_job

__all__ = ["DEFAULT_RETRIES", "Plan", "plan", "sweep"]

#: how many times Dask runs a job again after it raised (a worker that died is another count:
#: distributed.scheduler.allowed-failures)
DEFAULT_RETRIES = 2

Echo = Callable[[str], None]


@dataclass
class Plan:
    """One experiment of a sweep: its config, entry, jobs and the reports of finished jobs."""

    config: Any
    entry: Path
    jobs: list[Job]
    reports: dict[str, dict] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)


def plan(config: Any, *, device: str = "cpu", code: str | None = None) -> Plan:
    """The plan of ``config``: its entry in the cache (``cache.entry_path``) and its jobs."""
    code = cache.code_hash(config=config) if code is None else code
    entry = cache.entry_path(config, code).resolve()
    return Plan(config, entry, plan_jobs(config, entry=entry, code=code, device=device))


def _complete_entry(p: Plan) -> cache.RunResult | None:
    """The entry of ``p`` if it is complete and intact (then nothing is trained)."""
    if not (p.entry / "manifest.json").exists():
        return None
    try:
        meta, tensors = cache.read_entry(p.entry)
    except ValueError:
        return None  # damaged: written again below
    return cache.RunResult(p.config, tensors, meta["metrics"], meta, p.entry, cached=True)


def _job_line(n: int, total: int, p: Plan, job: Job, r: dict) -> str:
    how = "trained" if r["trained"] else "found finished"
    resumed = ""
    if r["trained"] and r.get("checkpoints_found"):
        step = r.get("resumed_from_step")
        resumed = f", resumed from step {step}" if step else ", resumed from its checkpoint"
    return (
        f"[{n}/{total}] {p.config.name} {job.label}: {how} in {r['wall_time_s']:.1f} s on "
        f"{r['host']} ({r['worker'] or 'no worker'}, {r['device']}){resumed}"
    )


def _failure(p: Plan, job: Job, fut: Future, retries: int) -> str:
    """What to tell about a job that failed for good."""
    where = f"{p.config.name} {job.label} (task {job.key})"
    kept = ", ".join(str(f) for f in job.checkpoint_files()) or "none written yet"
    if fut.status == "cancelled":
        return f"{where}: cancelled on the cluster"
    exc = fut.exception()
    if isinstance(exc, KilledWorker):
        last = getattr(exc.last_worker, "address", exc.last_worker)
        return (
            f"{where}: the {exc.allowed_failures + 1} workers that ran it all died (the last: "
            f"{last}); checkpoints kept: {kept}. Run the sweep again to resume it (see the "
            "workers' logs: out of memory? killed by the batch system?)"
        )
    return f"{where}: {type(exc).__name__}: {exc} (tried {retries + 1} times; checkpoints: {kept})"


def _submit(client: Client, p: Plan, retries: int, echo: Echo) -> list[Future]:
    """Submit the jobs of ``p`` whose output does not exist yet."""
    futures = []
    p.entry.mkdir(parents=True, exist_ok=True)
    echo(f"{p.config.name}: {len(p.jobs)} job(s); entry {p.entry}")
    for job in p.jobs:
        if job.output.exists():
            p.reports[job.name] = {"job": job.name, "trained": False}
            p.reports[job.name].update(load_output(job)["provenance"])
            echo(f"{p.config.name} {job.label}: finished in an earlier sweep, not trained again")
            continue
        resources = {"GPU": 1} if job.device.startswith("cuda") else None
        futures.append(
            client.submit(
                run_job, job, key=job.key, retries=retries, pure=False, resources=resources
            )
        )
    return futures


def _warn_without_gpu(client: Client, echo: Echo) -> None:
    workers = client.scheduler_info().get("workers", {}).values()
    if not any(w.get("resources", {}).get("GPU") for w in workers):
        echo(
            "no worker declares the resource GPU yet: the jobs wait for one (start workers "
            "with --resources GPU=1)"
        )


def sweep(
    configs: list[Any],
    client: Client,
    *,
    device: str = "cpu",
    retries: int = DEFAULT_RETRIES,
    echo: Echo = print,
) -> list[cache.RunResult]:
    """Train the experiments ``configs`` on the cluster of ``client`` and write their entries
    (see the module docstring); returns them in the order of ``configs``."""
    plans = [plan(c, device=device) for c in configs]  # each with the hash of what it runs
    results: dict[int, cache.RunResult] = {}
    futures: list[Future] = []
    owner: dict[str, int] = {}
    scheduler = client.scheduler.address
    for i, p in enumerate(plans):
        done = _complete_entry(p)
        if done is not None:
            echo(f"{p.config.name}: entry complete already, nothing to train: {p.entry}")
            results[i] = done
            continue
        for fut in _submit(client, p, retries, echo):
            owner[fut.key] = i
            futures.append(fut)
        if len(p.reports) == len(p.jobs):  # every job finished in an earlier sweep
            results[i] = _write(p, scheduler, echo)
    if device.startswith("cuda") and futures:
        _warn_without_gpu(client, echo)
    failures = _collect(client, futures, owner, plans, results, retries, echo)
    if failures:
        raise SweepError(
            "jobs failed:\n  "
            + "\n  ".join(failures)
            + "\nevery other job's output is saved; run the sweep again to finish"
        )
    return [results[i] for i in range(len(plans))]


def _collect(client, futures, owner, plans, results, retries: int, echo: Echo) -> list[str]:
    """Wait for ``futures``, one line per finished job; write each experiment's entry when its
    last job finishes. Returns the failures (a code mismatch raises at once)."""
    failures: list[str] = []
    try:
        for n, fut in enumerate(as_completed(futures), start=1):
            p = plans[owner[fut.key]]
            job = next(j for j in p.jobs if j.key == fut.key)
            if fut.status != "finished":
                exc = fut.exception() if fut.status == "error" else None
                if isinstance(exc, CodeHashMismatchError):
                    client.cancel(futures)
                    raise exc
                failures.append(_failure(p, job, fut, retries))
                echo(f"[{n}/{len(futures)}] FAILED {failures[-1]}")
                continue
            report = fut.result()
            p.reports[job.name] = report
            echo(_job_line(n, len(futures), p, job, report))
            if len(p.reports) == len(p.jobs):
                results[owner[fut.key]] = _write(p, client.scheduler.address, echo)
    except BaseException:
        client.cancel(futures)  # the finished jobs' outputs and every checkpoint stay
        raise
    return failures


def _write(p: Plan, scheduler: str, echo: Echo) -> cache.RunResult:
    t0 = time.perf_counter()
    result = finish(p.config, p.jobs, p.reports, scheduler=scheduler, started=p.started)
    echo(f"{p.config.name}: entry written in {time.perf_counter() - t0:.1f} s: {result.path}")
    return result
