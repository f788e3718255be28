"""The normalised held-out losses of a teacher-student sweep (Sec. 4.2, Fig. 3A/B's excess loss):
held-out MSE / Var(teacher output), 1 = predicting 0, 0 = the construction's loss."""

from __future__ import annotations

import numpy as np
import torch

from ..experiments.profiles import derive_seed
from ..experiments.teacher_student import TeacherStudentConfig


def normalised_losses(config: TeacherStudentConfig, eval_loss: torch.Tensor):
    """(sizes (S,), losses (S, R)) from ``eval_loss`` (E,) in ``config.members()`` order (sizes
    outer); the variance over the same held-out sequences, all steps and outputs. ValueError:
    a wrong shape."""
    sizes = np.array(config.sizes if config.sizes else (config.n,))
    R = len(config.seeds)
    eval_loss = torch.as_tensor(eval_loss, dtype=torch.float64)
    if eval_loss.shape != (sizes.size * R,):
        raise ValueError(
            f"eval_loss must have shape ({sizes.size * R},), got {tuple(eval_loss.shape)}"
        )
    var = []
    for seed in config.seeds:
        g = torch.Generator().manual_seed(derive_seed(seed, "eval"))
        _, y = config.task(seed).sample(config.eval_batch, g)
        var.append(float(y.var()))
    return sizes, (eval_loss.reshape(sizes.size, R) / torch.tensor(var)).numpy()
