"""Is Fig. 3's edge ours or the paper's? Fig. 3A at the CPU budget under three of our choices
changed one at a time (ours, beyond the paper).

The CPU-budget sweep of Fig. 3A (``cpu_budget``, 100,000 steps, T = 32, 5 seeds) finds the loss
edge at the construction's own count (14), not at the paper's ~28. Three settings of that run
are ours, not the paper's, and could drive it:

    wd        weight decay 0.07 (Fig. 2's, which prunes) instead of the sweeps' 1e-4
    teacher   the teacher's entries N(0, 1/d) (the engine's default, variance 1/d) instead of
              N(0, TEACHER_STD^2) = N(0, 0.04)
    lr        learning rate 1e-3 (the paper profile's) instead of the sweeps' 1e-2

Each variant is the CPU-budget config of Fig. 3A with that one setting changed and the sizes cut
to ``SIZES`` (below the construction's count to its double, each a size of the baseline run),
so that every member is paired with the baseline run's member of the same seed and size (same
teacher except in ``teacher``, same initialisation and data). The baseline is the recorded
``how-many-neurons-A-cpu``. They are fixed here, with the rows that score them
(``report/paper_values.json``: ``fig3.robust.*``), before any of them ran; each is recorded as
``how-many-neurons-A-cpu-<variant>``.

Glossary (code name -> meaning):
    VARIANTS      variant name -> (what it changes, in words)
    SIZES         n = m of each variant's members: 8 (below 14), 14 (the construction), 20,
                  24, 28 (twice it)
    robust_config the variant's config
"""

from __future__ import annotations

import dataclasses

from .how_many_neurons import PANELS
from .teacher_student import TeacherStudentConfig

__all__ = ["SIZES", "VARIANTS", "robust_config"]

#: n = m of each variant's members: from below the construction's 14 to its double
SIZES = (8, 14, 20, 24, 28)

#: variant -> what it changes against the CPU-budget sweep of Fig. 3A
VARIANTS = {
    "wd": "weight decay 0.07 (Fig. 2's) instead of 1e-4",
    "teacher": "teacher entries of variance 1/d instead of 0.2^2",
    "lr": "learning rate 1e-3 instead of 1e-2",
}


def robust_config(variant: str, base: TeacherStudentConfig) -> TeacherStudentConfig:
    """The Fig. 3A sweep ``base`` (the CPU budget's) with ``variant`` changed and sizes SIZES."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    if base.d != PANELS["A"]["d"]:
        raise ValueError(f"the variants are of Fig. 3A (d = 4); got a config with d = {base.d}")
    missing = set(SIZES) - set(base.sizes)
    if missing:
        raise ValueError(f"the baseline sweep lacks sizes {sorted(missing)}: no pairing")
    config = dataclasses.replace(base, sizes=SIZES)
    if variant == "wd":
        return dataclasses.replace(
            config, train=dataclasses.replace(config.train, weight_decay=0.07)
        )
    if variant == "lr":
        return dataclasses.replace(config, train=dataclasses.replace(config.train, lr=1e-3))
    return dataclasses.replace(config, teacher_std=None)  # the task's default: N(0, 1/d)
