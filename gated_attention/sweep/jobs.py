"""The jobs of a sweep: how one experiment splits into independent pieces of training.

What: ``plan_jobs(config, entry=..., code=..., device=...)`` lists the ``Job``s of an
experiment. A job is a frozen description a worker runs on its own (``worker.run_job``); the
client combines the jobs' outputs into the entry ``cache.run(config)`` writes (``assemble``).

Why these units: the entry must hold exactly the numbers a local run computes, so a job is a
piece of training the local run also does on its own, sharing nothing with the others:

    TeacherStudentConfig   teacher-identification, how-many-neurons-A/B, and
    RegressionConfig       in-context-regression: one job per ensemble of the engine's
                           ``train_by_size`` (``intercept.ensemble_groups``): the size groups of
                           ``plan_ensembles`` on the CPU, a single ensemble (one job) on a GPU.
                           The seeds of one size are one ensemble locally, so they stay one job:
                           teacher-identification (one size) is one job.
    ArchitectureConfig     architectures-*-lr: one job per (family, target, lr) group.
    RecallConfig           associative-recall: one job per gating ("io", "side", "io-ce"); the
                           "io-ce" ablation trains without checkpoints (its own loop).
    any other config       one job, the whole ``compute``: its pieces are not known here
                           (optimiser-comparison: three short runs, no checkpoints).

Where things live, in the entry's folder on the shared storage: each job's output in
``sweep/<job>.pt``, a marker per completed training in ``sweep/completed/``, and its checkpoint
at the very file a local run of the experiment uses (``checkpoint.pt``, ``checkpoint-<k>.pt``,
``group-<k>.pt``, ``checkpoint-<gating>.pt``), so that a local run of an interrupted sweep
resumes its unfinished jobs from their checkpoints too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..experiments.architectures import ArchitectureConfig
from ..experiments.associative_recall import RecallConfig
from ..experiments.in_context_regression import RegressionConfig
from ..experiments.teacher_student import TeacherStudentConfig
from .intercept import capture_call, ensemble_groups

__all__ = ["KINDS", "SWEEP_DIR", "Job", "plan_jobs"]

#: what a job trains: an ensemble of train_by_size, an architectures group, a recall gating,
#: or the whole experiment
KINDS = ("ensemble", "group", "gating", "whole")

#: the folder, inside an entry, of the jobs' outputs (removed once the entry is written)
SWEEP_DIR = "sweep"


@dataclass(frozen=True)
class Job:
    """One job: ``kind`` and ``index`` (ensemble or group number, or gating name) of the
    experiment ``config``; ``members`` the member indices of an ensemble; ``entry`` the absolute
    path of the results entry on the shared storage; ``code_hash`` the client's
    ``code_hash()``, which the worker's must equal; ``device`` "cpu" or "cuda"."""

    config: Any
    kind: str
    index: int | str
    label: str
    entry: str
    code_hash: str
    device: str = "cpu"
    members: tuple[int, ...] = ()
    checkpoints: tuple[str, ...] = ()  # file names (globs) of its checkpoints in the entry

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown job kind {self.kind!r}; expected one of {KINDS}")
        if not Path(self.entry).is_absolute():
            raise ValueError(f"a job's entry must be an absolute path, got {self.entry!r}")

    @property
    def name(self) -> str:
        """``<kind>-<index>``: unique within the experiment."""
        return f"{self.kind}-{self.index}"

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
        """The checkpoint files of this job that exist now."""
        root = Path(self.entry)
        return sorted({p for pattern in self.checkpoints for p in root.glob(pattern)})


def plan_jobs(config: Any, *, entry: Path, code: str, device: str = "cpu") -> list[Job]:
    """The jobs of ``config`` (see the module docstring), to be trained on ``device``."""
    base = {"config": config, "entry": str(Path(entry).resolve()), "code_hash": code}
    base["device"] = device
    if isinstance(config, TeacherStudentConfig | RegressionConfig):
        return _ensemble_jobs(config, base, device)
    if isinstance(config, ArchitectureConfig):
        return [
            Job(
                kind="group",
                index=k,
                label=f"group {k}: {fam}, {target} parameters, lr {lr:g}",
                checkpoints=(f"group-{k}.pt",),
                **base,
            )
            for k, (fam, target, lr) in enumerate(config.groups())
        ]
    if isinstance(config, RecallConfig):
        return [
            Job(
                kind="gating",
                index=g,
                label=f"gating {g}: {len(config.members(g))} members",
                checkpoints=(f"checkpoint-{g}.pt", f"checkpoint-{g}-*.pt"),
                **base,
            )
            for g in config.gatings
        ]
    label = f"the whole experiment ({type(config).__name__} is not split)"
    return [Job(kind="whole", index=0, label=label, checkpoints=("checkpoint*.pt",), **base)]


def _ensemble_jobs(config: Any, base: dict, device: str) -> list[Job]:
    call = capture_call(config)
    groups = ensemble_groups(call, device)
    jobs = []
    for k, idx in enumerate(groups):
        n = max(call.students[e].n for e in idx)
        ck = "checkpoint.pt" if len(groups) == 1 else f"checkpoint-{k}.pt"
        label = f"ensemble {k}: {len(idx)} members, n <= {n}"
        job = Job(
            kind="ensemble", index=k, label=label, members=tuple(idx), checkpoints=(ck,), **base
        )
        jobs.append(job)
    return jobs


def entry_tag(entry: str | Path) -> str:
    """8 hex digits naming an entry's full path."""
    return hashlib.sha256(str(entry).encode()).hexdigest()[:8]
