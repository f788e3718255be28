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

Two later additions, fixed here with their rows before they ran:

    lr-wd   both paper-like settings at once (learning rate 1e-3 and weight decay 0.07): the
            fourth corner of the 2 x 2 of the two choices that moved the edge; its sizes are
            ``SIZES`` and ``FINE_SIZES`` together
    fine    ``FINE_SIZES`` for the variants whose edge sat at 20 on the coarse grid (``FINE``):
            sqrt 2 x 14 = 19.8 lies between 19 and 20, so a fine sweep decides on which side
            of it the edge lies; recorded as ``how-many-neurons-A-cpu-<variant>-fine`` and read
            together with the coarse run (same seeds: same teachers and data)

These train in mode "compiled" (the same step as "fast", fused: equal up to rounding, tested in
tests/test_training.py), which a 2-core CPU runs about twice as fast; size 20 is in both the
coarse and the fine sweep, so the two modes are compared member by member at one size.

Glossary (code name -> meaning):
    VARIANTS      variant name -> (what it changes, in words)
    SIZES         n = m of each variant's members: 8 (below 14), 14 (the construction), 20,
                  24, 28 (twice it)
    FINE_SIZES    the fine sweep between 14 and 28: 16, 18, 19, 20, 22
    FINE          the variants that have a fine sweep
    robust_config the variant's config
    fine_config   the fine sweep of a variant of FINE
"""

from __future__ import annotations

import dataclasses

from .how_many_neurons import PANELS
from .teacher_student import TeacherStudentConfig

__all__ = ["FINE", "FINE_SIZES", "SIZES", "VARIANTS", "fine_config", "robust_config"]

#: n = m of each variant's members: from below the construction's 14 to its double
SIZES = (8, 14, 20, 24, 28)
#: the fine sweep: 19 < sqrt 2 x 14 = 19.8 < 20 decides which side of sqrt 2 an edge lies on
FINE_SIZES = (16, 18, 19, 20, 22)

#: variant -> what it changes against the CPU-budget sweep of Fig. 3A
VARIANTS = {
    "wd": "weight decay 0.07 (Fig. 2's) instead of 1e-4",
    "teacher": "teacher entries of variance 1/d instead of 0.2^2",
    "lr": "learning rate 1e-3 instead of 1e-2",
    "lr-wd": "learning rate 1e-3 and weight decay 0.07 instead of 1e-2 and 1e-4",
}
#: the variants with a fine sweep (their coarse edge sat at 20 = 1.43 x 14)
FINE = ("wd", "lr")
#: the mode of the runs added later (lr-wd and the fine sweeps)
LATER_MODE = "compiled"


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
    if variant == "lr-wd":
        train = dataclasses.replace(config.train, lr=1e-3, weight_decay=0.07, mode=LATER_MODE)
        return dataclasses.replace(config, sizes=tuple(sorted({*SIZES, *FINE_SIZES})), train=train)
    return dataclasses.replace(config, teacher_std=None)  # the task's default: N(0, 1/d)


def fine_config(variant: str, base: TeacherStudentConfig) -> TeacherStudentConfig:
    """The fine sweep (``FINE_SIZES``, mode ``LATER_MODE``) of ``variant`` (one of ``FINE``)."""
    if variant not in FINE:
        raise ValueError(f"no fine sweep of {variant!r}; the fine sweeps: {', '.join(FINE)}")
    config = robust_config(variant, base)
    train = dataclasses.replace(config.train, mode=LATER_MODE)
    return dataclasses.replace(config, sizes=FINE_SIZES, train=train)
