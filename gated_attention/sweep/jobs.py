"""The jobs of a sweep: an experiment's own plan (``experiments.protocol``), bound to an entry.

What: ``plan_jobs(config, entry=..., code=..., device=...)`` lists the ``Job``s of an
experiment: one per job of ``config.jobs(device)`` (the experiment's plan: the ensembles of a
size sweep, the groups of an architectures sweep, the gatings of associative recall, ...), with
the entry it belongs to, the client's code hash and the device. A worker trains one with the
experiment's ``train_job`` (``worker.run_job``); the client hands their outputs to the
experiment's ``assemble`` (``assemble.finish``). The sweep knows nothing else of an experiment.

Where things live, in the entry's folder on the shared storage: each job's output in
``sweep/<key>.pt``, a marker per completed training in ``sweep/completed/``, and its checkpoints
at the very files a local run of the experiment uses (``<key>.pt``, and ``<key>.<part>.pt`` for
a job that trains in several parts), so that a local run of an interrupted sweep resumes its
unfinished jobs from their checkpoints too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..experiments.protocol import Job as Plan

__all__ = ["SWEEP_DIR", "Job", "plan_jobs"]

#: the folder, inside an entry, of the jobs' outputs (removed once the entry is written)
SWEEP_DIR = "sweep"


@dataclass(frozen=True)
class Job:
    """One job of the experiment ``config``: ``plan``, the experiment's own description of it
    (``experiments.protocol.Job``); ``entry`` the absolute path of the results entry on the
    shared storage; ``code_hash`` the client's ``code_hash(config=config)``, which the worker's
    must equal; ``device`` "cpu" or "cuda"."""

    config: Any
    plan: Plan
    entry: str
    code_hash: str
    device: str = "cpu"

    def __post_init__(self) -> None:
        if not Path(self.entry).is_absolute():
            raise ValueError(f"a job's entry must be an absolute path, got {self.entry!r}")

    @property
    def name(self) -> str:
        """The experiment's key of the job: unique within the experiment."""
        return self.plan.key

    @property
    def label(self) -> str:
        return self.plan.label

    @property
    def members(self) -> tuple[int, ...]:
        return self.plan.members

    @property
    def checkpoint(self) -> Path:
        """The file the job checkpoints to (a local run's too)."""
        return Path(self.entry) / f"{self.name}.pt"

    @property
    def output(self) -> Path:
        """Where the job's result is written, atomically, when it has finished."""
        return Path(self.entry) / SWEEP_DIR / f"{self.name}.pt"

    @property
    def key(self) -> str:
        """The task key on the cluster: entry, job and a tag of the entry's full path (the same
        entry in two caches is two tasks), readable in the cluster's logs."""
        return f"{Path(self.entry).name}-{self.name}-{entry_tag(self.entry)}"

    def checkpoint_files(self) -> list[Path]:
        """The checkpoint files of this job that exist now (``<key>.pt``, ``<key>.*.pt``)."""
        root = Path(self.entry)
        found = {p for p in (self.checkpoint, *root.glob(f"{self.name}.*.pt")) if p.exists()}
        return sorted(found)


def plan_jobs(config: Any, *, entry: Path, code: str, device: str = "cpu") -> list[Job]:
    """The jobs of ``config`` (its ``jobs(device)``), to be trained on ``device``."""
    if not callable(getattr(config, "jobs", None)):
        raise TypeError(
            f"{type(config).__name__} does not speak the experiment protocol "
            "(experiments.protocol.Experiment: jobs, train_job, assemble)"
        )
    entry_abs = str(Path(entry).resolve())
    return [Job(config, spec, entry_abs, code, device) for spec in config.jobs(device)]


def entry_tag(entry: str | Path) -> str:
    """8 hex digits naming an entry's full path."""
    return hashlib.sha256(str(entry).encode()).hexdigest()[:8]
