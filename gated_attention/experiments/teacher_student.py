"""The teacher-student experiment (Sec. 4.1-4.2): one frozen config whose members (seed, n, m)
train as one ensemble or a few (a size sweep); the chapters' configs are built from it in
``teacher_identification`` and ``how_many_neurons``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..engine import TrainConfig, plan_ensembles, train_ensemble
from ..models.fast_path import gated_rnn_fast
from ..models.gated_rnn import GatedRNN
from ..tasks.protocol import masked_mse
from ..tasks.teacher_student import TeacherStudentTask
from .profiles import derive_seed, held_out_batch
from .protocol import Experiment, Job, combine_outputs, ensemble_jobs, ensemble_output


@dataclass(frozen=True)
class TeacherStudentConfig(Experiment):
    """The teacher-student experiment of Sec. 4.1 (and the size sweeps of Sec. 4.2, Fig. 3A/B).

    A member's seed gives its teacher (of rank ``teacher_rank``: 6 for d = 12, Fig. 3B), its
    student's initialisation and its data stream, so members with one seed and different sizes
    share teacher and data (a paired sweep). Ours: teacher weights N(0, 1/d) by default; student
    weights N(0, 1/fan_in) times ``init_scale``, lam ~ U(lam_range); ``train``; ``eval_batch``.
    """

    name: str = "teacher-student"
    d: int = 4
    T: int = 32
    teacher_rank: int | None = None
    teacher_std: float | None = None
    n: int = 100
    m: int = 100
    sizes: tuple[int, ...] = ()  # n = m of each member; empty: every member has (n, m)
    seeds: tuple[int, ...] = (0,)
    side: bool = False
    lam_range: tuple[float, float] = (0.0, 1.0)
    init_scale: float = 1.0
    eval_batch: int = 1024
    train: TrainConfig = field(default_factory=lambda: TrainConfig(steps=1_000_000))

    def __post_init__(self) -> None:
        if not self.seeds:
            raise ValueError("seeds must name at least one seed")
        for k in (self.d, self.T, self.n, self.m, *self.sizes):
            if not isinstance(k, int) or k < 1:
                raise ValueError(f"d, T, n, m and sizes must be positive integers, got {k!r}")
        if not isinstance(self.train, TrainConfig):
            raise TypeError(f"train must be a TrainConfig, got {type(self.train).__name__}")

    def members(self) -> list[tuple[int, int, int]]:
        """(seed, n, m) of every ensemble member: sizes outer, seeds inner."""
        sizes = [(s, s) for s in self.sizes] if self.sizes else [(self.n, self.m)]
        return [(seed, n, m) for n, m in sizes for seed in self.seeds]

    def ensembles(self, device: str = "cpu") -> list[list[int]]:
        """The member indices of each ensemble trained on ``device`` (``engine.plan_ensembles``)."""
        sizes = [(n, m) for _, n, m in self.members()]
        T, B = self.T, self.train.batch_size
        return plan_ensembles(sizes, self.d, self.d, T, B, self.side, device=device)

    def task(self, seed: int) -> TeacherStudentTask:
        """The task (teacher and data distribution) of the members with this seed."""
        return TeacherStudentTask.from_seed(
            self.d,
            seed=derive_seed(seed, "teacher"),
            T=self.T,
            rank=self.teacher_rank,
            std=self.teacher_std,
        )

    def student(self, seed: int, n: int, m: int) -> GatedRNN:
        """The initial student of one member."""
        seed = derive_seed(seed, "student")
        rnn = GatedRNN(self.d, n, m, side=self.side, seed=seed, lam_range=self.lam_range)
        with torch.no_grad():
            for name, p in rnn.named_parameters():
                if name != "nu":
                    p.mul_(self.init_scale)
        return rnn

    def jobs(self, device: str = "cpu") -> list[Job]:
        return ensemble_jobs(self.ensembles(device), [n for _, n, _ in self.members()])

    def train_job(self, job: Job, *, checkpoint: Path | None = None, progress: bool = True):
        """Train the members of one ensemble (``protocol.ensemble_output``)."""
        members = [self.members()[e] for e in job.members]
        tasks = {seed: self.task(seed) for seed in dict.fromkeys(s for s, _, _ in members)}
        res = train_ensemble(
            [tasks[seed] for seed, _, _ in members],
            [self.student(*mb) for mb in members],
            self.train,
            data_seeds=[derive_seed(seed, "data") for seed, _, _ in members],
            checkpoint=checkpoint,
            progress=progress,
            desc=f"{self.name} {job.label}",
        )
        return ensemble_output(res)

    def assemble(self, jobs: list[Job], outputs: list[dict]):
        """Every member's parameters, curves and held-out loss."""
        members = self.members()
        students = [self.student(*mb) for mb in members]
        res = combine_outputs(students, jobs, outputs, self.train.torch_dtype)
        # MSE of each member on ``eval_batch`` fresh held-out sequences (float64)
        seeds = [seed for seed, _, _ in members]
        tasks = {seed: self.task(seed) for seed in self.seeds}
        x, y = held_out_batch([tasks[seed] for seed in seeds], seeds, self.eval_batch)
        p = {k: v.detach().to(torch.float64) for k, v in res.params.items()}
        with torch.no_grad():
            eval_loss = masked_mse(gated_rnn_fast(x, p), y)
        tensors = {
            "params": p,
            "sizes": torch.tensor([[n, m] for _, n, m in members]),
            "seeds": torch.tensor([seed for seed, _, _ in members]),
            "loss_steps": res.loss_steps,
            "losses": res.losses.to(torch.float64),
            "eval_loss": eval_loss,
        }
        metrics = {
            "final_train_loss": res.final_loss.tolist(),
            "eval_loss": eval_loss.tolist(),
            "train_wall_time_s": res.wall_time,
            "resumed_from_step": res.resumed_from,
        }
        return tensors, metrics
