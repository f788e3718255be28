"""Teacher identification with lam capped below 1 (beyond the paper: is lam = 1 needed?).

The students of Sec. 4.1 (``teacher_identification``: d = 4, the same teachers, optimiser and
seeds' streams) trained with ``TrainConfig.lam_max`` (nu projected onto lam <= lam_max after
every step), per cap and sequence length. Why: book/beyond.md.

Glossary (code name -> meaning):
    CAPS       the caps lam_max (1.0: no cap, the baseline)
    LENGTHS    the sequence lengths T
    capped_memory_config          one (profile, T, lam_max) run, a TeacherStudentConfig
    capped_construction_loss      held-out normalised loss of the capped construction
"""

from __future__ import annotations

import numpy as np
import torch

from ..constructions.capped_memory import cap_memory, check_lam_max
from ..constructions.gated_rnn import construct_rnn
from ..engine import TrainConfig
from ..models.attention import LinearSelfAttention
from .profiles import check_profile, derive_seed
from .teacher_identification import LR, TEACHER_STD, WEIGHT_DECAY
from .teacher_student import TeacherStudentConfig

CAPS = (1.0, 0.99, 0.9)
LENGTHS = (8, 32)
QUICK_N, QUICK_STEPS = 32, 10_000


def capped_memory_config(profile: str, T: int, lam_max: float) -> TeacherStudentConfig:
    """The teacher-identification student with lam <= lam_max (at init: lam ~ U(0, lam_max)).

    quick   n = m = QUICK_N = 32, QUICK_STEPS = 10,000 steps, seeds (0, 1, 2) as one ensemble;
            recorded runs (``dev.record capped-memory-T<T>-lam<lam_max> --profile quick``)
    paper   the same at 50,000 steps (ours; the paper has no such experiment)
    smoke   n = m = 16, 30 steps, one seed: only proves the code path
    """
    check_profile(profile)
    lam_max = check_lam_max(lam_max)
    if not isinstance(T, int) or isinstance(T, bool) or T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
    name = f"capped-memory-T{T}-lam{lam_max:g}"
    if profile == "smoke":
        n, seeds = 16, (0,)
        tc = TrainConfig(steps=30, log_every=10, chunk_steps=10, lam_max=lam_max)
    else:
        n, seeds = QUICK_N, (0, 1, 2)
        steps = QUICK_STEPS if profile == "quick" else 50_000
        tc = TrainConfig(
            steps=steps, lr=LR, weight_decay=WEIGHT_DECAY, log_every=100, lam_max=lam_max
        )
    return TeacherStudentConfig(
        name=name,
        d=4,
        T=T,
        teacher_std=TEACHER_STD,
        n=n,
        m=n,
        seeds=seeds,
        lam_range=(0.0, lam_max),
        train=tc,
    )


def capped_memory_configs(profile: str) -> dict[tuple[int, float], TeacherStudentConfig]:
    """{(T, lam_max): config} for every T of LENGTHS and cap of CAPS."""
    return {(T, c): capped_memory_config(profile, T, c) for T in LENGTHS for c in CAPS}


def capped_construction_loss(config: TeacherStudentConfig, *, banks: int = 1) -> np.ndarray:
    """(R,) held-out MSE / Var(teacher output) per seed of the symmetric construction (App. A.3,
    float64) with its key-value neurons at lam_max in ``banks`` banks (``cap_memory``), on the
    sequences its students are scored on."""
    out = []
    for seed in config.seeds:
        task = config.task(seed)
        t = task.teacher
        weights = {k: getattr(t, k).detach().to(torch.float64) for k in ("W_V", "W_K", "W_Q")}
        built = construct_rnn(LinearSelfAttention(**weights), "symmetric")
        rnn = cap_memory(built, config.train.lam_max, banks=banks)
        g = torch.Generator().manual_seed(derive_seed(seed, "eval"))
        x, y = task.sample(config.eval_batch, g)
        with torch.no_grad():
            y_hat = rnn(x.to(torch.float64))
        y = y.to(torch.float64)
        out.append(float((y_hat - y).square().mean() / y.var()))
    return np.array(out)
