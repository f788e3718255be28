"""Does the real Mamba block learn attention? (ours, beyond the paper; issue 36): the Mamba block
as released (``models.mamba_block``) and the simplified Mamba-style layer of Table 3
(``models.mamba``) trained side by side on the teacher-student task at one small parameter count
and budget, as in Fig. 4A (``architectures``: d = 6, teachers N(0, 0.2^2), AdamW + cosine). One
rate for both (``lr``, ours: of 3e-3 and 1e-2, tried on these seeds at 600 steps, 1e-2 gave both
the lower loss).

Glossary (code name -> meaning -> shape):
    eval_loss     held-out loss over the teacher's output power (1: predicting 0)    (F, E)
    train_curves  mean training loss of each of K windows of ``train.log_every``  (F, K, E)
    widths, counts  width and parameter count of each family                        (F,)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..engine import TrainConfig, train
from ..models.family_registry import width_for
from ..models.mamba import MAMBA
from ..models.mamba_block import MAMBA_BLOCK
from ..models.shell import parameter_count
from ..tasks.protocol import masked_mse
from ..tasks.teacher_student import TeacherStudentTask
from .profiles import check_profile, derive_seed, held_out_batch
from .protocol import Experiment, Job
from .teacher_identification import TEACHER_STD

#: the two blocks compared (not in the family registry), in the order the tables list them
FAMILIES = {MAMBA.name: MAMBA, MAMBA_BLOCK.name: MAMBA_BLOCK}


@dataclass(frozen=True)
class RealBlockLearningConfig(Experiment):
    """The simplified Mamba-style layer and the real Mamba block, ``seeds`` members each."""

    name: str = "real-block-learning"
    d: int = 6
    T: int = 8
    target: int = 1000
    seeds: tuple[int, ...] = (0, 1, 2)
    lr: float = 1e-2
    eval_batch: int = 1024
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(steps=500, log_every=50, chunk_steps=50)
    )

    def task(self, seed: int) -> TeacherStudentTask:
        """The task of the members with this seed (its own teacher)."""
        teacher_seed = derive_seed(seed, "teacher")
        return TeacherStudentTask.from_seed(self.d, seed=teacher_seed, T=self.T, std=TEACHER_STD)

    def jobs(self, device: str = "cpu") -> list[Job]:
        """One job per family, its seeds as one ensemble."""
        return [
            Job(key=name, label=f"{name}, about {self.target} parameters", part=name)
            for name in FAMILIES
        ]

    def train_job(self, job: Job, *, checkpoint: Path | None = None, progress: bool = True):
        """Train one family's seeds as one ensemble."""
        fam = FAMILIES[str(job.part)]
        width = width_for(fam, self.d, self.d, self.target)
        g = torch.Generator().manual_seed(derive_seed(0, f"init/{fam.name}/{self.target}"))
        params = fam.init(self.d, self.d, width, len(self.seeds), g, torch.float64)
        res = train(
            [self.task(s) for s in self.seeds],
            params,
            TrainConfig(**{**self.train.__dict__, "lr": self.lr}),
            data_seeds=[derive_seed(s, "data") for s in self.seeds],
            no_decay=fam.no_decay,
            forward=fam.forward,
            checkpoint=checkpoint,
            progress=progress,
            desc=f"{self.name} {fam.name}",
            on_nonfinite="keep",
        )
        p = {k: v.to(torch.float64) for k, v in res.params.items()}
        return {
            "width": width,
            "count": parameter_count(p),
            "losses": res.losses.to(torch.float64),
            "eval_loss": self._eval(fam, p),
        }

    def _eval(self, fam, params: dict) -> torch.Tensor:
        """(E,) held-out loss over the teacher's output power, ``eval_batch`` sequences each."""
        x, y = held_out_batch([self.task(s) for s in self.seeds], self.seeds, self.eval_batch)
        with torch.no_grad():
            y_hat = fam.forward(x, params)
        t0 = self.task(self.seeds[0])
        return masked_mse(y_hat, y, t0.loss_mask, t0.loss_scale) / y.square().mean(dim=(1, 2, 3))

    def assemble(self, jobs: list[Job], outputs: list[dict]):
        tensors = {
            "eval_loss": torch.stack([o["eval_loss"] for o in outputs]),
            "train_curves": torch.stack([o["losses"] for o in outputs]),
            "widths": torch.tensor([int(o["width"]) for o in outputs]),
            "counts": torch.tensor([int(o["count"]) for o in outputs]),
        }
        return tensors, {"families": [str(job.part) for job in jobs]}


def real_block_learning_config(profile: str) -> RealBlockLearningConfig:
    """smoke: 2 seeds, 4 steps (the code path only); quick: 3 seeds, 500 steps of batch 64
    (about 30 s on one core); paper: 5 seeds, 5,000 steps (ours: the paper trains no Mamba
    block; a few minutes on one core)."""
    check_profile(profile)
    if profile == "smoke":
        tc = TrainConfig(steps=4, log_every=2, chunk_steps=2)
        return RealBlockLearningConfig(seeds=(0, 1), eval_batch=64, train=tc)
    if profile == "quick":
        return RealBlockLearningConfig()
    tc = TrainConfig(steps=5000, log_every=250, chunk_steps=50, checkpoint_every=1000)
    return RealBlockLearningConfig(seeds=(0, 1, 2, 3, 4), eval_batch=4096, train=tc)
