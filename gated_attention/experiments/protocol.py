"""The experiment protocol: what every experiment says about its training, as data.

An experiment config (a frozen dataclass with a ``name``) derives from ``Experiment`` and gives

    jobs(device)                        the plan: its independent pieces of training, ``Job``s
                                        (an ensemble of a size sweep, a (family, target, lr)
                                        group, a gating, a family's rate search and run, ...)
    train_job(job, checkpoint, progress)  trains one job through the engine (whatever its loss
                                        or optimiser: ``engine.TrainConfig``) and returns its
                                        output: a dict of tensors and plain values
    assemble(jobs, outputs)             the entry's (tensors, metrics) from every job's output

``Experiment.compute`` runs the plan in one process (what ``cache.run`` calls); the sweep
(``gated_attention.sweep``) runs the same jobs on a cluster and assembles them with the same
``assemble``. Neither knows an experiment's internals, so both make the same entry, number for
number. Jobs share nothing but the config: a job's output depends on the config and the job
only, never on another job's output or on the order in which they run.

Resuming: with a ``checkpoint`` path, job ``key`` checkpoints to ``<key>.pt`` beside it, and a
finished job's output is kept in ``<key>-done.pt`` until the entry is assembled, so an
interrupted run trains only its unfinished jobs, each from its last checkpoint.

Glossary (code name -> meaning):
    Job                 key (unique in the experiment, a file name), label (for people),
                        members (an ensemble's member indices), part (a group index, a gating,
                        a family: what the experiment reads to know which piece it is)
    ensemble_jobs       the jobs of a member sweep trained as ensembles (``plan_ensembles``)
    ensemble_output     a TrainResult as a job's output (a dict), and ``ensemble_result`` back
"""

from __future__ import annotations

import abc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..atomic import atomic_write
from ..engine import TrainResult, resolve_device
from .side_by_side import run_side_by_side, side_by_side

__all__ = [
    "Experiment",
    "Job",
    "compute",
    "ensemble_jobs",
    "ensemble_output",
    "ensemble_result",
]


@dataclass(frozen=True)
class Job:
    """One independent piece of an experiment's training (see the module docstring)."""

    key: str
    label: str
    members: tuple[int, ...] = ()
    part: int | str | None = None

    def __post_init__(self) -> None:
        if not self.key or any(c in self.key for c in "/\\ "):
            raise ValueError(f"a job key must be a non-empty file name, got {self.key!r}")


class Experiment(abc.ABC):
    """The protocol an experiment config speaks (see the module docstring); a config class
    that leaves out one of the three methods cannot be instantiated."""

    @abc.abstractmethod
    def jobs(self, device: str = "cpu") -> list[Job]:
        """The independent jobs of the experiment, to be trained on ``device``."""

    @abc.abstractmethod
    def train_job(self, job: Job, *, checkpoint: Path | None = None, progress: bool = True):
        """Train ``job``; returns its output (tensors and plain values, loadable with
        ``torch.load(weights_only=True)``)."""

    @abc.abstractmethod
    def assemble(self, jobs: list[Job], outputs: list[dict]) -> tuple[dict, dict]:
        """(tensors, metrics) of the entry from every job's output, in the order of ``jobs``."""

    def compute(self, *, checkpoint: Path | None = None, progress: bool = True):
        """Every job here, one after another, then ``assemble``: (tensors, metrics)."""
        return compute(self, checkpoint=checkpoint, progress=progress)


def compute(
    config: Experiment,
    *,
    checkpoint: str | Path | None = None,
    progress: bool = True,
    device: str | None = None,
    jobs_at_once: int | None = None,
) -> tuple[dict, dict]:
    """Run the plan of ``config`` in this process (resuming, see the module docstring); on a
    GPU ``jobs_at_once`` jobs side by side (``side_by_side``: default
    $GATED_ATTENTION_SIDE_BY_SIDE, else 1), each on its own CUDA stream."""
    device = resolve_device(device).type if device is None else device
    jobs = config.jobs(device)
    keys = [job.key for job in jobs]
    if not jobs or len(set(keys)) != len(keys):
        raise ValueError(f"{type(config).__name__}.jobs must give distinct job keys, got {keys}")
    path = None if checkpoint is None else Path(checkpoint)
    t0, ran, outputs, todo = time.perf_counter(), [0], {}, []
    for k, job in enumerate(jobs):
        done = None if path is None else path.with_name(f"{job.key}-done.pt")
        if done is not None and done.exists():
            outputs[k] = torch.load(done, weights_only=True)
        else:
            todo.append((k, job, done))

    def one(job: Job, done: Path | None):
        """Train one job, keep its output beside the checkpoint, drop its own checkpoint."""
        ck = None if path is None else path.with_name(f"{job.key}.pt")
        out = config.train_job(job, checkpoint=ck, progress=progress)
        if done is not None:
            atomic_write(done, lambda p, out=out: torch.save(out, p))
        if ck is not None:
            ck.unlink(missing_ok=True)
        ran[0] += 1
        if progress and len(jobs) > 1:
            now = len(outputs) + ran[0]
            print(overall_progress(now, len(jobs), ran[0], time.perf_counter() - t0), flush=True)
        return out

    n = side_by_side() if jobs_at_once is None else jobs_at_once
    calls = [lambda job=job, done=done: one(job, done) for _, job, done in todo]
    for (k, _, _), out in zip(todo, run_side_by_side(calls, n, device), strict=True):
        outputs[k] = out
    result = config.assemble(jobs, [outputs[k] for k in range(len(jobs))])
    if path is not None:
        for job in jobs:
            path.with_name(f"{job.key}-done.pt").unlink(missing_ok=True)
    return result


def overall_progress(done: int, total: int, ran: int, elapsed: float) -> str:
    """One line on the whole run: jobs done of ``total``, the time the ``ran`` jobs of this
    call took, and the rest at their mean pace (jobs differ in cost: a rough figure)."""
    left = (total - done) * elapsed / max(ran, 1)
    return (
        f"jobs {done}/{total} done; {elapsed / 60:.1f} min so far, about "
        f"{left / 60:.1f} min left at this pace"
    )


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


def ensemble_result(out: dict[str, Any]) -> TrainResult:
    """The TrainResult of a job's output (``ensemble_output``'s inverse)."""
    return TrainResult(
        out["params"], out["loss_steps"], out["losses"], out["wall_time"], out["resumed_from"]
    )
