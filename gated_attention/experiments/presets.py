"""Named training settings: what each experiment of the book trains with, for a user's own runs.

A preset is the task (T, the teacher's scale), the student's size and the optimiser of one
experiment at its quick profile, read from that experiment's config (one source: change the
experiment, the preset follows). ``workbench.fit`` takes one by name.

    identify   Sec. 4.1 (Fig. 2, Table 1): AdamW lr 1e-2, weight decay 0.07, cosine, 60,000
               steps at T = 8, n = m = 48, teacher entries N(0, 0.2^2). Shows, on most seeds:
               the student learns the teacher (held-out loss below 1e-6 on 15 of the 20 seeds
               of the recorded quick run teacher-identification-quick-20-seeds, from 4e-10 to
               2e-5) with the construction's states (Score KV and Score Q near 0); the decay
               prunes neurons that carry nothing. Does not show: exactly 14 = 10 + 4 neurons;
               surplus near-copies survive AdamW (the teacher-identification chapter).
    sweep      Sec. 4.2 (Fig. 3A): lr 1e-2, weight decay 1e-4, 15,000 steps at T = 8. Shows: the
               loss a student of a given size reaches (the loss edge); prunes nothing.
    default    the engine's defaults (``TrainConfig(steps=3_000)``: lr 1e-3, weight decay
               1e-4), T = 8, n = m = 48: a short run that shows the code path, not a finding
               (nothing is pruned and most neurons' lam are neither ~1 nor ~0).

Glossary (code name -> meaning):
    Preset       one named setting: train (TrainConfig), T, teacher_std, n, experiment, shows
    PRESETS      name -> Preset
    preset       the Preset of a name (a clear error for an unknown one)
    with_overrides  a Preset with some of its TrainConfig fields replaced
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..engine import TrainConfig
from .how_many_neurons import how_many_neurons_config
from .teacher_identification import QUICK_N, teacher_identification_config

__all__ = ["Preset", "PRESETS", "preset", "with_overrides"]


@dataclass(frozen=True)
class Preset:
    """One named setting. ``teacher_std``: the std of the teacher's entries (None: 1/sqrt(d),
    the task's default); ``n``: the student's hidden and output-gating neurons (n = m);
    ``experiment``: the registry name whose quick profile it is (None for ``default``);
    ``shows``: what a run with it shows, and what not."""

    name: str
    train: TrainConfig
    T: int
    teacher_std: float | None
    n: int
    experiment: str | None
    shows: str


def _identify() -> Preset:
    c = teacher_identification_config("quick")
    return Preset(
        "identify",
        c.train,
        c.T,
        c.teacher_std,
        c.n,
        "teacher-identification",
        "on most seeds the student learns the teacher with the construction's states (Score "
        "KV and Score Q near 0); not exactly 14 = 10 + 4 neurons",
    )


def _sweep() -> Preset:
    c = how_many_neurons_config("quick", "A")
    return Preset(
        "sweep",
        c.train,
        c.T,
        c.teacher_std,
        QUICK_N,
        "how-many-neurons-A",
        "the loss a student of a given size reaches (Fig. 3A's loss edge); prunes nothing",
    )


def _default() -> Preset:
    return Preset(
        "default",
        TrainConfig(steps=3_000),
        teacher_identification_config("quick").T,
        teacher_identification_config("quick").teacher_std,
        QUICK_N,
        None,
        "the code path only: nothing is pruned and the states are not yet the construction's",
    )


#: name -> Preset (built once, from the experiments' own configs)
PRESETS: dict[str, Preset] = {p.name: p for p in (_identify(), _sweep(), _default())}


def preset(name: str | Preset) -> Preset:
    """The Preset called ``name`` (a Preset is returned as it is)."""
    if isinstance(name, Preset):
        return name
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; expected one of {', '.join(PRESETS)}")
    return PRESETS[name]


def with_overrides(p: Preset, **train_fields) -> Preset:
    """``p`` with some TrainConfig fields replaced (``steps=...``, ``lr=...``); an unknown field
    is a ValueError naming it."""
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(train_fields) - known)
    if unknown:
        raise ValueError(f"unknown TrainConfig field(s) {unknown}; known: {sorted(known)}")
    return dataclasses.replace(p, train=dataclasses.replace(p.train, **train_fields))
