"""The CPU budget: the longest run of each undecided learning claim that one sitting of about two
hours on a 2-core CPU affords (what it trains and how to record it: book/reference.md).

Each config is the quick profile's with only its budget changed (steps, T, seeds, sizes; for
Fig. 4A/4B a warm-up and a rate search on a held-out seed); App. D.3's paper profile fits a
sitting as it is. Fixed before any of them ran; recorded as ``<experiment>-<budget>``.

Glossary (code name -> meaning):
    CPU_RUNS     experiment name -> its config at the CPU budget
    HELD_OUT     the seed the learning-rate searches train (no seed of a main run)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .architectures import (
    ArchitectureConfig,
    architectures_config,
    architectures_sweep_config,
    best_lrs,
)
from .associative_recall import associative_recall_config
from .cache import run
from .how_many_neurons import how_many_neurons_config
from .robustness import FINE, VARIANTS, fine_config, robust_config
from .teacher_identification import teacher_identification_config

HELD_OUT = 100


def _how_many_neurons(panel: str) -> Any:
    """Fig. 3A/B: the quick sweep at T = 32, 5 seeds, sizes up to about twice the construction's
    count, as many steps as a sitting affords."""
    quick = how_many_neurons_config("quick", panel)
    sizes, steps = {
        "A": ((8, 14, 20, 24, 28, 32, 40, 48), 100_000),
        "B": ((24, 42, 63, 84, 105, 126), 40_000),
    }[panel]
    tc = dataclasses.replace(
        quick.train, steps=steps, log_every=500, chunk_steps=50, checkpoint_every=2_000
    )
    return dataclasses.replace(quick, T=32, sizes=sizes, seeds=(0, 1, 2, 3, 4), train=tc)


#: Fig. 4A ("teacher") and 4B ("regression"): main steps (10x quick), search steps, warm-up share
_ARCH = {"teacher": (12_000, 2_000), "regression": (10_000, 2_000)}
_WARMUP = 0.05


def _longer(quick: ArchitectureConfig, task: str, steps: int, **train) -> ArchitectureConfig:
    """``quick`` at T = 32 for 4A, ``steps`` steps (a ``_WARMUP`` share warm-up), ``train`` set."""
    warmup = int(_WARMUP * steps)
    tc = dataclasses.replace(quick.train, steps=steps, warmup_steps=warmup, **train)
    return dataclasses.replace(quick, T=32 if task == "teacher" else quick.T, train=tc)


def _architectures_sweep(task: str) -> ArchitectureConfig:
    """Fig. 4A/4B's rate search at the CPU budget: the quick sweep on HELD_OUT, with warm-up."""
    quick = architectures_sweep_config("quick", task)
    sweep = _longer(quick, task, _ARCH[task][1], log_every=100, chunk_steps=50, checkpoint_every=0)
    return dataclasses.replace(sweep, seeds=(HELD_OUT,))


def _architectures_main(task: str, resolve: Callable[[Any], Any] = run) -> ArchitectureConfig:
    """Fig. 4A/4B's main run at the CPU budget: each family at its searched rate, 10x quick."""
    sweep = _architectures_sweep(task)
    quick = architectures_config("quick", task, lrs=best_lrs(sweep, resolve(sweep).tensors))
    return _longer(quick, task, _ARCH[task][0], log_every=200, checkpoint_every=1_000)


#: Fig. 2's budgets, each a complete run with its own cosine schedule: the quick run's steps
#: times these (the last is the "cpu" budget)
LADDER = (2, 4, 8)
#: "cpu" (every run), "cpu-x<k>" (LADDER's lower rungs), "cpu-<variant>" (Fig. 3A with one of our
#: choices changed, ``robustness``) and "cpu-<variant>-fine" (its fine sweep)
BUDGETS = (
    "cpu",
    *(f"cpu-x{k}" for k in LADDER[:-1]),
    *(f"cpu-{v}" for v in VARIANTS),
    *(f"cpu-{v}-fine" for v in FINE),
)


def _teacher_identification(times: int) -> Any:
    """Fig. 2's quick config at ``times`` its steps."""
    quick = teacher_identification_config("quick")
    tc = dataclasses.replace(quick.train, steps=times * quick.train.steps, checkpoint_every=5_000)
    return dataclasses.replace(quick, train=tc)


CPU_RUNS: dict[str, Callable[..., Any]] = {
    "teacher-identification": lambda: _teacher_identification(LADDER[-1]),
    "how-many-neurons-A": lambda: _how_many_neurons("A"),
    "how-many-neurons-B": lambda: _how_many_neurons("B"),
    "architectures-teacher-lr": lambda: _architectures_sweep("teacher"),
    "architectures-regression-lr": lambda: _architectures_sweep("regression"),
    "architectures-teacher": lambda resolve=run: _architectures_main("teacher", resolve),
    "architectures-regression": lambda resolve=run: _architectures_main("regression", resolve),
    "associative-recall": lambda: associative_recall_config("paper"),  # it fits a sitting
}


def cpu_config(name: str, budget: str = "cpu", *, resolve: Callable[[Any], Any] = run) -> Any:
    """The config of experiment ``name`` at ``budget`` (one of BUDGETS); a main run of Fig.
    4A/4B reads its rates from the search entry ``resolve`` returns (default ``cache.run``)."""
    if budget not in BUDGETS:
        raise ValueError(f"unknown budget {budget!r}; expected one of {', '.join(BUDGETS)}")
    variant = budget.removeprefix("cpu-").removesuffix("-fine")
    if variant in VARIANTS:
        if name != "how-many-neurons-A":
            raise ValueError(f"budget {budget!r} is a variant of Fig. 3A's sweep only")
        if budget.endswith("-fine"):
            return fine_config(variant, _how_many_neurons("A"))
        return robust_config(variant, _how_many_neurons("A"))
    if budget != "cpu":
        if name != "teacher-identification":
            raise ValueError(f"budget {budget!r} is a rung of Fig. 2's ladder only")
        return _teacher_identification(int(budget.removeprefix("cpu-x")))
    if name not in CPU_RUNS:
        raise ValueError(
            f"no CPU-budget run of {name!r}; the CPU budget has: {', '.join(CPU_RUNS)}"
        )
    if name.startswith("architectures-") and not name.endswith("-lr"):
        return CPU_RUNS[name](resolve=resolve)
    return CPU_RUNS[name]()
