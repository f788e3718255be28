"""From the jobs' outputs to the results entry a local ``cache.run(config)`` writes.

What: ``entry_contents(config, jobs, outputs)`` returns the (tensors, metrics) of the
experiment: its own ``assemble`` applied to the finished jobs' outputs, in the order of its plan,
as ``Experiment.compute`` applies it to the outputs of a local run. ``write_entry`` then stores
them as ``cache.run`` does (tensors.pt, meta.json, manifest.json, each atomically, the manifest
last), its meta with a "sweep" field: every job's worker (host, address, device, code hash, wall
time, checkpoints it resumed from, completions). The jobs' outputs are removed only after the
entry is complete: nothing finished is lost on the way.

Why: the book reads entries through ``cache.run``; an entry written here must be the entry a
local run writes, number for number, so that nothing downstream can tell them apart.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

import torch

from .._version import __version__
from ..atomic import atomic_write
from ..experiments import cache
from .jobs import SWEEP_DIR, Job
from .provenance import SweepError
from .worker import completions, load_output

__all__ = ["entry_contents", "finish", "write_entry"]


def entry_contents(config: Any, jobs: list[Job], results: list[dict]) -> tuple[dict, dict]:
    """(tensors, metrics) of ``config`` from its finished jobs: the experiment's ``assemble``."""
    return config.assemble([job.plan for job in jobs], results)


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_entry(path: Path, config: Any, tensors: dict, metrics: dict, meta_extra: dict) -> Path:
    """Store an entry at ``path`` as ``cache.run`` stores it; ``meta_extra`` holds code_hash,
    hardware, wall_time_s and sweep (the fields a local run fills from its own process)."""
    path.mkdir(parents=True, exist_ok=True)
    for stale in ("manifest.json", "meta.json", "tensors.pt"):
        (path / stale).unlink(missing_ok=True)
    meta = {
        "name": config.name,
        "config": cache._config_dict(config),  # the very record a local run writes
        "package_version": __version__,
        "code_hash": meta_extra["code_hash"],
        "torch_version": torch.__version__,
        "hardware": meta_extra["hardware"],
        "wall_time_s": meta_extra["wall_time_s"],
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "metrics": metrics,
        "sweep": meta_extra["sweep"],
    }
    atomic_write(path / "tensors.pt", lambda p: torch.save(tensors, p))
    meta_text = json.dumps(meta, indent=1, default=str)
    atomic_write(path / "meta.json", lambda p: p.write_text(meta_text))
    sums = {f: _sha256_file(path / f) for f in ("tensors.pt", "meta.json")}
    atomic_write(path / "manifest.json", lambda p: p.write_text(json.dumps(sums, indent=1)))
    cache.read_entry(path)  # complete and intact, or ValueError naming the problem
    return path


def _sweep_record(jobs: list[Job], reports: dict[str, dict], scheduler: str) -> dict:
    """The entry's "sweep" field: each job's worker, and every worker once."""
    rows, workers = [], {}
    for job in jobs:
        r = reports[job.name]
        rows.append(
            {
                "job": job.name,
                "label": job.label,
                "trained_in_this_sweep": bool(r["trained"]),
                "completions": completions(job),
                **{k: v for k, v in r.items() if k not in ("job", "trained", "hardware")},
            }
        )
        key = f"{r['host']} {r['worker']} {r['device']}"
        workers[key] = {k: r.get(k) for k in ("host", "worker", "device", "code_hash")}
        workers[key]["hardware"] = r["hardware"]
    return {"scheduler": scheduler, "jobs": rows, "workers": list(workers.values())}


def finish(
    config: Any, jobs: list[Job], reports: dict[str, dict], *, scheduler: str, started: float
) -> cache.RunResult:
    """Assemble and write the entry of ``config`` from its finished ``jobs`` (their ``reports``
    from ``run_job``), then remove the jobs' outputs; returns it as ``cache.run`` would."""
    missing = [str(j.output) for j in jobs if not j.output.exists()]
    if missing:
        raise SweepError(
            f"finished jobs' outputs are not visible on the client: {', '.join(missing)}; the "
            "cache directory must be shared storage, at the same path on client and workers"
        )
    results = [load_output(j)["result"] for j in jobs]
    tensors, metrics = entry_contents(config, jobs, results)
    first = reports[jobs[0].name]
    extra = {
        "code_hash": jobs[0].code_hash,
        "hardware": first["hardware"],  # where the (first) job trained: what chapters print
        "wall_time_s": time.perf_counter() - started,
        "sweep": _sweep_record(jobs, reports, scheduler),
    }
    path = write_entry(Path(jobs[0].entry), config, tensors, metrics, extra)
    shutil.rmtree(path / SWEEP_DIR, ignore_errors=True)
    for job in jobs:
        for f in job.checkpoint_files():
            f.unlink(missing_ok=True)
    meta, _ = cache.read_entry(path)
    return cache.RunResult(config, tensors, metrics, meta, path, cached=False)
