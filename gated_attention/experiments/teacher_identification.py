"""Teacher identification (Sec. 4.1, Fig. 2, Table 1): the config of the chapter, per profile.

A ``TeacherStudentConfig``: d = 4, a student of n = m hidden and output-gating neurons, three
seeds as one ensemble (teacher, student and data from each seed). Our choices where the paper
is silent:

    teacher scale   W_V, W_K, W_Q entries N(0, TEACHER_STD^2), TEACHER_STD = 0.2: the teacher's
                    output then has variance of order 1 averaged over the steps (with the
                    default 1/sqrt(d) an absolute loss of 1e-4 would be a relative error of
                    ~4e-7). The chapter's sensitivity section varies it.
    optimiser       AdamW + cosine annealing (the paper's), learning rate LR and weight decay
                    WEIGHT_DECAY (ours: the values did not survive in the copy of the paper we
                    use), weight decay on every parameter but nu (the paper's). Pruning needs
                    lr x weight decay x steps of several units; AdamW's default weight decay
                    1e-4 at lr 1e-3 prunes nothing in 1,000,000 steps, a weight decay several
                    times larger than ours collapses the student. The pilot runs behind these
                    values are in the git history of this file.

Glossary (code name -> paper symbol -> section):
    teacher_identification_config   the d = 4 student of Sec. 4.1, Fig. 2, Table 1
"""

from __future__ import annotations

import dataclasses

from ..engine import TrainConfig
from .profiles import check_profile
from .teacher_student import TeacherStudentConfig

__all__ = [
    "SENSITIVITY",
    "sensitivity_config",
    "TEACHER_STD",
    "HELD_OUT_SEEDS",
    "TUNING_SEEDS",
    "LR",
    "WEIGHT_DECAY",
    "QUICK_T",
    "teacher_identification_config",
]

TEACHER_STD = 0.2
#: the optimiser of every profile but smoke (see the module docstring)
LR, WEIGHT_DECAY = 1e-2, 0.07
#: the quick profile's student size and budget
QUICK_N, QUICK_STEPS = 48, 60_000
#: the seeds of the pilots behind LR and WEIGHT_DECAY (a label, no config reads it): the paper
#: profile trains these same seeds 0-2, so its rows come from tuning seeds, never held-out ones
TUNING_SEEDS = (0, 1, 2)
#: the quick profile's seeds: none of them was used to choose its settings (the pilots behind
#: LR and WEIGHT_DECAY ran TUNING_SEEDS), so its counts score the settings, not the tuning
HELD_OUT_SEEDS = (3, 4, 5, 6, 7)
#: the quick profile's sequence length (the paper's is 32): the construction is exact for every
#: T, and a step costs about a quarter, so the quick budget buys more steps
QUICK_T = 8


def teacher_identification_config(profile: str) -> TeacherStudentConfig:
    """Sec. 4.1: d = 4, seeds as one ensemble (paper: the tuning seeds 0-2, TUNING_SEEDS;
    quick: the held-out 3-7).

    paper   T = 32, n = m = 100, 1,000,000 steps of batch 64 (the paper's), LR, WEIGHT_DECAY,
            checkpoints every 10,000 steps; seeds 0-2, the seeds that chose LR and WEIGHT_DECAY
            (none of them held out).
    quick   T = QUICK_T = 8, n = m = QUICK_N = 48 (over three times the construction's 14),
            QUICK_STEPS steps, the same optimiser, the five HELD_OUT_SEEDS as one ensemble.
    smoke   n = m = 24, 30 steps, two seeds: only proves the code path.
    """
    check_profile(profile)
    base = TeacherStudentConfig(
        name="teacher-identification", d=4, T=32, teacher_std=TEACHER_STD, seeds=(0, 1, 2)
    )
    if profile == "smoke":
        tc = TrainConfig(steps=30, log_every=10, chunk_steps=10)
        return dataclasses.replace(base, n=24, m=24, seeds=(0, 1), train=tc)
    if profile == "quick":
        tc = TrainConfig(
            steps=QUICK_STEPS,
            lr=LR,
            weight_decay=WEIGHT_DECAY,
            log_every=100,
            checkpoint_every=1000,
        )
        return dataclasses.replace(
            base, T=QUICK_T, n=QUICK_N, m=QUICK_N, seeds=HELD_OUT_SEEDS, train=tc
        )
    tc = TrainConfig(
        steps=1_000_000, lr=LR, weight_decay=WEIGHT_DECAY, log_every=1000, checkpoint_every=10_000
    )
    return dataclasses.replace(base, n=100, m=100, train=tc)


#: the sensitivity of the counts to the optimiser (does the surplus depend on our choice of LR
#: and WEIGHT_DECAY?): the chosen pair and each of the two halved or doubled, at the paper's size
SENSITIVITY = {
    "chosen": (LR, WEIGHT_DECAY),
    "wd-half": (LR, WEIGHT_DECAY / 2),
    "wd-double": (LR, WEIGHT_DECAY * 2),
    "lr-half": (LR / 2, WEIGHT_DECAY),
    "lr-double": (LR * 2, WEIGHT_DECAY),
}


def sensitivity_config(profile: str, setting: str) -> TeacherStudentConfig:
    """The paper's student (n = m = 100) with one optimiser setting of SENSITIVITY changed.

    quick   T = QUICK_T, QUICK_STEPS steps, two held-out seeds (3, 4) as one ensemble: longer
            than a build can afford, so the chapter reads these as recorded runs.
    paper   T = 32, 1,000,000 steps, the tuning seeds 0-2 (the paper profile with the setting
            changed).
    smoke   n = m = 24, 30 steps, one seed.
    """
    check_profile(profile)
    if setting not in SENSITIVITY:
        raise ValueError(f"unknown setting {setting!r}; expected one of {', '.join(SENSITIVITY)}")
    lr, wd = SENSITIVITY[setting]
    base = teacher_identification_config("paper")
    name = f"teacher-identification-{setting}"
    if profile == "smoke":
        tc = TrainConfig(steps=30, lr=lr, weight_decay=wd, log_every=10, chunk_steps=10)
        return dataclasses.replace(base, name=name, n=24, m=24, seeds=(3,), train=tc)
    if profile == "quick":
        tc = TrainConfig(
            steps=QUICK_STEPS, lr=lr, weight_decay=wd, log_every=100, checkpoint_every=1000
        )
        return dataclasses.replace(base, name=name, T=QUICK_T, seeds=(3, 4), train=tc)
    tc = dataclasses.replace(base.train, lr=lr, weight_decay=wd)
    return dataclasses.replace(base, name=name, train=tc)
