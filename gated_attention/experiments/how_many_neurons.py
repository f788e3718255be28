"""How many neurons (Sec. 4.2, Fig. 3A/B): final loss against n = m, the chapter's configs.

Panel "A": d = 4 (the construction needs 14 = d(d+1)/2 + d neurons, symmetric compression);
panel "B": d = 12 with a rank-6 teacher (42 neurons, low-rank compression). Sizes bracket twice
the construction's count.
"""

from __future__ import annotations

import dataclasses

from ..engine import TrainConfig
from .profiles import check_profile
from .teacher_identification import QUICK_T, TEACHER_STD
from .teacher_student import TeacherStudentConfig

#: d, teacher rank, the construction's neuron count (symmetric for A, low-rank for B) and the
#: teacher's entry std (ours: output variance of order 1 for A, about 7 for B).
PANELS = {
    "A": {"d": 4, "rank": None, "construction": 14, "teacher_std": TEACHER_STD},
    "B": {"d": 12, "rank": 6, "construction": 42, "teacher_std": 0.105},
}


def how_many_neurons_config(profile: str, panel: str) -> TeacherStudentConfig:
    """The n = m sweep of Fig. 3A (panel "A") or 3B ("B").

    paper   5 seeds, T = 32, 1,000,000 steps, lr 1e-3, weight decay 1e-4 (the engine's
            defaults; ours), in mode "compiled" (the same training up to rounding)
    quick   3 seeds, lr 1e-2, weight decay 1e-4 (the sweep measures the loss, not pruning),
            T = QUICK_T = 8, 15,000 steps for A and 5,000 for B (a costlier step)
    smoke   2 seeds, three small sizes, 20 steps
    """
    check_profile(profile)
    if panel not in PANELS:
        raise ValueError(f"unknown panel {panel!r}; expected 'A' or 'B'")
    d, rank = PANELS[panel]["d"], PANELS[panel]["rank"]
    base = TeacherStudentConfig(
        name=f"how-many-neurons-{panel}",
        d=d,
        T=32,
        teacher_rank=rank,
        teacher_std=PANELS[panel]["teacher_std"],
    )
    if profile == "smoke":
        sizes = (4, 8, 16) if panel == "A" else (8, 16, 32)
        tc = TrainConfig(steps=20, log_every=10, chunk_steps=10)
        return dataclasses.replace(base, sizes=sizes, seeds=(0, 1), train=tc)
    if profile == "quick":
        sizes = (8, 14, 20, 28, 36, 48) if panel == "A" else (24, 42, 63, 84, 105, 126)
        steps = 15_000 if panel == "A" else 5_000
        tc = TrainConfig(
            steps=steps,
            lr=1e-2,
            weight_decay=1e-4,
            log_every=50,
            checkpoint_every=1000,
            chunk_steps=50,
        )
        return dataclasses.replace(base, T=QUICK_T, sizes=sizes, seeds=(0, 1, 2), train=tc)
    sizes = (
        (8, 12, 16, 20, 24, 28, 32, 40, 48, 64)
        if panel == "A"
        else (24, 36, 42, 54, 63, 72, 84, 96, 105, 126, 150)
    )
    tc = TrainConfig(steps=1_000_000, log_every=1000, checkpoint_every=10_000, mode="compiled")
    return dataclasses.replace(base, sizes=sizes, seeds=(0, 1, 2, 3, 4), train=tc)
