"""The experiment protocol: what every experiment says about its training, as data.

An experiment config (a frozen dataclass with a ``name``) derives from ``Experiment``: ``jobs``
(its independent pieces of training), ``train_job`` (one of them, through the engine),
``assemble`` (the entry from every job's output). ``experiments.runner`` runs the plan on any
executor, so every executor makes the same entry: a job's output depends on the config and the
job only, never on another job or the order they run.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine import TrainResult, combine_ensembles
from .runner import compute


@dataclass(frozen=True)
class Job:
    """One independent piece of an experiment's training: ``key`` a file name unique in the
    experiment; ``members`` an ensemble's member indices; ``part`` what the experiment reads to
    know which piece it is (a group index, a gating, a family)."""

    key: str
    label: str
    members: tuple[int, ...] = ()
    part: int | str | None = None

    def __post_init__(self) -> None:
        if not self.key or any(c in self.key for c in "/\\ "):
            raise ValueError(f"a job key must be a non-empty file name, got {self.key!r}")


class Experiment(abc.ABC):
    """The protocol an experiment config speaks (see the module docstring)."""

    @abc.abstractmethod
    def jobs(self, device: str = "cpu") -> list[Job]:
        """The independent jobs of the experiment, to be trained on ``device``."""

    @abc.abstractmethod
    def train_job(self, job: Job, *, checkpoint: Path | None = None, progress: bool = True):
        """Train ``job``; its output (loadable with ``torch.load(weights_only=True)``)."""

    @abc.abstractmethod
    def assemble(self, jobs: list[Job], outputs: list[dict]) -> tuple[dict, dict]:
        """(tensors, metrics) of the entry from every job's output, in the order of ``jobs``."""

    def compute(self, *, checkpoint: Path | None = None, progress: bool = True):
        """Every job here (``runner.compute``), then ``assemble``: (tensors, metrics)."""
        return compute(self, checkpoint=checkpoint, progress=progress)


def ensemble_jobs(groups: Sequence[Sequence[int]], sizes: Sequence[int]) -> list[Job]:
    """One job per ensemble ``groups[k]`` (member indices, as planned for the device that
    trains them); ``sizes`` the n of each member."""
    jobs = []
    for k, idx in enumerate(groups):
        idx = tuple(int(e) for e in idx)
        label = f"ensemble {k}: {len(idx)} members, n <= {max(sizes[e] for e in idx)}"
        jobs.append(Job(key=f"ensemble-{k}", label=label, members=idx, part=k))
    return jobs


def ensemble_output(res: TrainResult) -> dict[str, Any]:
    """A TrainResult as a job's output."""
    return {
        "params": res.params,
        "loss_steps": res.loss_steps,
        "losses": res.losses,
        "wall_time": float(res.wall_time),
        "resumed_from": int(res.resumed_from),
    }


def combine_outputs(students: Sequence, jobs: list[Job], outputs: list[dict], dtype) -> TrainResult:
    """One TrainResult of all ``students`` from the ensemble jobs' outputs (``ensemble_output``'s
    inverse, then ``engine.combine_ensembles`` in ``dtype``)."""
    results = [
        TrainResult(o["params"], o["loss_steps"], o["losses"], o["wall_time"], o["resumed_from"])
        for o in outputs
    ]
    return combine_ensembles(students, [job.members for job in jobs], results, dtype)
