"""Every experiment by name: its config class and its config of a profile.

The command lines (``tools.record``) and ``config_from_dict`` (which rebuilds a stored config
from its class name, for the recorded runs) read these tables; a new experiment is added here
and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .architectures import ArchitectureConfig, architectures_sweep_config
from .associative_recall import RecallConfig, associative_recall_config
from .cache import rebuild_config
from .capped_memory import CAPS, LENGTHS, capped_memory_config
from .families_in_context import (
    SetupCheckConfig,
    setup_check_config,
    setup_check_lru_init_config,
)
from .how_many_neurons import how_many_neurons_config
from .in_context_regression import RegressionConfig, regression_config
from .optimiser_comparison import OptimiserComparisonConfig, optimiser_comparison_config
from .optimiser_members import OptimiserMembersConfig, optimiser_members_config
from .teacher_identification import SENSITIVITY, sensitivity_config, teacher_identification_config
from .teacher_student import TeacherStudentConfig

__all__ = ["EXPERIMENTS", "config_types", "config_from_dict", "experiment_config"]

#: experiment name -> the function giving its config in a profile
EXPERIMENTS: dict[str, Callable[[str], Any]] = {
    "teacher-identification": teacher_identification_config,
    "how-many-neurons-A": lambda profile: how_many_neurons_config(profile, "A"),
    "how-many-neurons-B": lambda profile: how_many_neurons_config(profile, "B"),
    "in-context-regression": regression_config,
    "architectures-teacher-lr": lambda profile: architectures_sweep_config(profile, "teacher"),
    "architectures-regression-lr": lambda profile: architectures_sweep_config(
        profile, "regression"
    ),
    "fig4b-setup": setup_check_config,
    "fig4b-setup-lru-init": setup_check_lru_init_config,
    "associative-recall": associative_recall_config,
    "optimiser-comparison": optimiser_comparison_config,
    "optimiser-comparison-members": optimiser_members_config,
    # the counts' sensitivity to the optimiser: one experiment per SENSITIVITY setting
    **{
        f"teacher-identification-{s}": (lambda profile, s=s: sensitivity_config(profile, s))
        for s in SENSITIVITY
    },
    # beyond the paper: teacher identification with lam <= lam_max, a run per (T, lam_max)
    **{
        f"capped-memory-T{T}-lam{c:g}": (
            lambda profile, T=T, c=c: capped_memory_config(profile, T, c)
        )
        for T in LENGTHS
        for c in CAPS
    },
}


def config_types() -> dict[str, type]:
    """The config classes a results entry can name, by class name."""
    return {
        cls.__qualname__: cls
        for cls in (
            TeacherStudentConfig,
            RegressionConfig,
            ArchitectureConfig,
            SetupCheckConfig,
            RecallConfig,
            OptimiserComparisonConfig,
            OptimiserMembersConfig,
        )
    }


def experiment_config(name: str, profile: str) -> Any:
    """The config of experiment ``name`` in ``profile``; an unknown name is a ValueError."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; expected one of {', '.join(EXPERIMENTS)}")
    return EXPERIMENTS[name](profile)


def config_from_dict(d: dict) -> Any:
    """The config a results entry's meta.json describes (``meta["config"]``): the inverse of
    what ``cache.run`` stores. Fields missing from ``d`` take today's defaults; a field that the
    config class no longer has is an error."""
    types = config_types()
    cls = types.get(d.get("type")) if isinstance(d, dict) else None
    if cls is None:
        got = d.get("type") if isinstance(d, dict) else d
        raise ValueError(f"unknown config type {got!r}; expected one of {', '.join(types)}")
    return rebuild_config(cls, d["fields"])
