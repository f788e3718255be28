"""Named training settings: what each experiment of the book trains with, for a user's own runs.

A preset is the task (T, the teacher's scale), the student's size and the optimiser of one
experiment's quick profile, read from its config (change the experiment, the preset follows).
``workbench.fit`` takes one by name (book/use_the_package.md).

    identify   Sec. 4.1 (Fig. 2, Table 1): ``teacher_identification_config("quick")``
    sweep      Sec. 4.2 (Fig. 3A): ``how_many_neurons_config("quick", "A")``
    default    the engine's defaults (``TrainConfig(steps=3_000)``), T and teacher of identify,
               n = m = 48: the code path, not a finding
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..engine import TrainConfig
from .how_many_neurons import how_many_neurons_config
from .teacher_identification import QUICK_N, teacher_identification_config


@dataclass(frozen=True)
class Preset:
    """One named setting. ``teacher_std``: the std of the teacher's entries (None: 1/sqrt(d),
    the task's default); ``n``: the student's hidden and output-gating neurons (n = m);
    ``shows``: what a run with it shows, and what not."""

    name: str
    train: TrainConfig
    T: int
    teacher_std: float | None
    n: int
    shows: str


def _presets() -> tuple[Preset, ...]:
    ident, sweep = teacher_identification_config("quick"), how_many_neurons_config("quick", "A")
    return (
        Preset(
            "identify",
            ident.train,
            ident.T,
            ident.teacher_std,
            ident.n,
            "on most seeds the student learns the teacher with the construction's states "
            "(Score KV and Score Q near 0); not exactly 14 = 10 + 4 neurons",
        ),
        Preset(
            "sweep",
            sweep.train,
            sweep.T,
            sweep.teacher_std,
            QUICK_N,
            "the loss a student of a given size reaches (Fig. 3A's loss edge); prunes nothing",
        ),
        Preset(
            "default",
            TrainConfig(steps=3_000),
            ident.T,
            ident.teacher_std,
            QUICK_N,
            "the code path only: nothing is pruned and the states are not yet the construction's",
        ),
    )


#: name -> Preset
PRESETS: dict[str, Preset] = {p.name: p for p in _presets()}


def preset(name: str | Preset) -> Preset:
    """The Preset called ``name`` (a Preset is returned as it is)."""
    if isinstance(name, Preset):
        return name
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; expected one of {', '.join(PRESETS)}")
    return PRESETS[name]


def with_overrides(p: Preset, **train_fields) -> Preset:
    """``p`` with some TrainConfig fields replaced; an unknown field is a ValueError naming it."""
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(train_fields) - known)
    if unknown:
        raise ValueError(f"unknown TrainConfig field(s) {unknown}; known: {sorted(known)}")
    return dataclasses.replace(p, train=dataclasses.replace(p.train, **train_fields))
