"""Is Fig. 3's edge ours or the paper's? Fig. 3A at the CPU budget (``cpu_budget``) with one of
our choices changed (ours, beyond the paper; why and what the runs show: book/how_many_neurons.md,
"Is the edge ours?"). Each variant cuts the sizes to ``SIZES``, so every member pairs with the
member of the same seed and size of the recorded ``how-many-neurons-A-cpu``; recorded as
``how-many-neurons-A-cpu-<variant>`` (a fine sweep: ``...-<variant>-fine``), scored by the rows
``fig3.robust.*`` of ``report/paper_values.json``, both fixed here before the runs.
"""

from __future__ import annotations

import dataclasses

from .how_many_neurons import PANELS
from .teacher_student import TeacherStudentConfig

#: n = m of each variant's members: from below the construction's 14 to its double
SIZES = (8, 14, 20, 24, 28)
#: the fine sweep: 19 < sqrt 2 x 14 = 19.8 < 20 decides which side of sqrt 2 an edge lies on
FINE_SIZES = (16, 18, 19, 20, 22)

#: variant -> what it changes against the CPU-budget sweep of Fig. 3A ("lr-wd": sizes ``SIZES``
#: and ``FINE_SIZES`` together)
VARIANTS = {
    "wd": "weight decay 0.07 (Fig. 2's) instead of 1e-4",
    "teacher": "teacher entries of variance 1/d instead of 0.2^2",
    "lr": "learning rate 1e-3 instead of 1e-2",
    "lr-wd": "learning rate 1e-3 and weight decay 0.07 instead of 1e-2 and 1e-4",
}
#: the variants with a fine sweep (their coarse edge sat at 20 = 1.43 x 14)
FINE = ("wd", "lr")
#: the mode of the runs added later, lr-wd and the fine sweeps (the step of "fast", fused)
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
