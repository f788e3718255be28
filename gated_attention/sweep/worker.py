"""Running one job on a worker: check the code, skip a finished job, train, save atomically.

What: ``run_job(job)`` is the function the client submits. It
    1. checks that the worker's ``code_hash()`` is the client's (``CodeHashMismatchError`` if not),
    2. returns at once if the job's output exists (a finished job is never trained again),
    3. trains the job on ``job.device`` with the experiment's own ``train_job``, checkpointing
       to the file a local run uses, so that a retry after a dead worker resumes from the last
       checkpoint,
    4. writes its output (result and provenance) atomically, then a completion marker, then
       removes its checkpoints,
and returns its report: ``trained`` (False: the output existed) and where it ran.

Why atomic and in this order: a worker may die at any moment. Before the output's rename the
checkpoint is still there (a retry resumes); after it the output is complete (a retry
returns it). Outputs hold tensors and plain containers only: loaded with weights_only=True.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from ..atomic import atomic_write
from ..engine import DEVICE_ENV, flush_denormals
from .jobs import SWEEP_DIR, Job
from .provenance import SweepError, check_code, describe_worker

__all__ = ["COMPLETED_DIR", "completions", "load_output", "run_job"]

#: inside the sweep folder: one empty file per training that ran to completion
COMPLETED_DIR = "completed"


def run_job(job: Job) -> dict[str, Any]:
    """Run ``job`` here (see the module docstring); returns its report."""
    code = check_code(job.code_hash, f"{Path(job.entry).name} {job.label}", job.config)
    entry = Path(job.entry)
    if not entry.is_dir():
        raise SweepError(
            f"the results entry {entry} does not exist on this worker: the cache directory "
            "must be shared storage, at the same path on the client and every worker"
        )
    if job.output.exists():
        return {"job": job.name, "trained": False, **load_output(job)["provenance"]}
    flush_denormals()  # per thread: this worker thread is not the one that imported the package
    keep_freed_memory()
    found = [p.name for p in job.checkpoint_files()]
    t0 = time.perf_counter()
    with _on_device(job.device):
        result = job.config.train_job(job.plan, checkpoint=job.checkpoint, progress=False)
        provenance = describe_worker(job.device, code)
    provenance["wall_time_s"] = time.perf_counter() - t0
    provenance["checkpoints_found"] = found
    if isinstance(result, dict) and "resumed_from" in result:
        provenance["resumed_from_step"] = int(result["resumed_from"])
    output = {"result": result, "provenance": provenance}
    atomic_write(job.output, lambda p: torch.save(output, p))
    marker = job.output.parent / COMPLETED_DIR / f"{job.name}.{uuid.uuid4().hex}"
    atomic_write(marker, lambda p: p.write_bytes(b""))
    for f in job.checkpoint_files():
        f.unlink(missing_ok=True)
    return {"job": job.name, "trained": True, **provenance}


#: glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory(mmap_mb: int = 64, trim_mb: int = 256) -> bool:
    """Let this process keep and reuse freed memory (glibc only; False elsewhere).

    Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which also fixes glibc's
    mmap threshold at 128 kB: every activation of a training step is then mapped, touched page
    by page and unmapped again, and a step costs twice its time in page faults (measured: 2,000
    steps of a 6-member ensemble, 12.7 s in a worker against 6.1 s in a plain process; 4.3 s
    after this call). Allocations below ``mmap_mb`` come from the heap again, and the heap is
    returned to the system only beyond ``trim_mb`` free.
    """
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(M_MMAP_THRESHOLD, mmap_mb << 20) == 1
        return ok and libc.mallopt(M_TRIM_THRESHOLD, trim_mb << 20) == 1
    except (OSError, AttributeError):
        return False


def load_output(job: Job) -> dict[str, Any]:
    """The output a job wrote: ``{"result": ..., "provenance": {...}}``."""
    return torch.load(job.output, weights_only=True)


def completions(job: Job) -> int:
    """How many times ``job`` has trained to completion (its markers)."""
    folder = Path(job.entry) / SWEEP_DIR / COMPLETED_DIR
    return len(list(folder.glob(f"{job.name}.*"))) if folder.is_dir() else 0


@contextmanager
def _on_device(device: str) -> Iterator[None]:
    """$GATED_ATTENTION_DEVICE = ``device`` inside: the experiments' training calls take their
    device from it (a worker runs one job at a time: one thread per worker)."""
    old = os.environ.get(DEVICE_ENV)
    os.environ[DEVICE_ENV] = device
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(DEVICE_ENV, None)
        else:
            os.environ[DEVICE_ENV] = old
