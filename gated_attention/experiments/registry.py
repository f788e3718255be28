"""Every experiment by name: its config class and its config of a profile.

The command lines (``dev.record``, ``python -m gated_attention.sweep``) and
``config_from_dict`` read these tables; a new experiment is added here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from .architectures import (
    ArchitectureConfig,
    architectures_config,
    architectures_sweep_config,
    best_lrs,
)
from .associative_recall import RecallConfig, associative_recall_config, prune_budget_config
from .cache import rebuild_config, run
from .capped_memory import CAPS, LENGTHS, capped_memory_config
from .families_in_context import (
    SetupCheckConfig,
    setup_check_config,
    setup_check_lru_init_config,
)
from .how_many_neurons import how_many_neurons_config
from .in_context_regression import RegressionConfig, regression_config
from .optimiser_comparison import OptimiserComparisonConfig, optimiser_comparison_config
from .optimiser_members import (
    OptimiserMembersConfig,
    optimiser_members_config,
    optimiser_new_seeds_config,
)
from .setup_pilots import PilotConfig, PilotSetConfig, pilot_set_config
from .teacher_identification import SENSITIVITY, sensitivity_config, teacher_identification_config
from .teacher_student import TeacherStudentConfig


def architectures_main_config(
    profile: str, task: str = "teacher", *, resolve: Callable[[Any], Any] = run
) -> ArchitectureConfig:
    """Fig. 4A ("teacher") or 4B ("regression"), each family at the rate its sweep chose (the
    ``architectures_sweep_config`` entry ``resolve`` returns: default ``cache.run``)."""
    sweep = architectures_sweep_config(profile, task)
    return architectures_config(profile, task, lrs=best_lrs(sweep, resolve(sweep).tensors))


#: experiment name -> the function giving its config in a profile
EXPERIMENTS: dict[str, Callable[[str], Any]] = {
    "teacher-identification": teacher_identification_config,
    "how-many-neurons-A": partial(how_many_neurons_config, panel="A"),
    "how-many-neurons-B": partial(how_many_neurons_config, panel="B"),
    "in-context-regression": regression_config,
    "architectures-teacher-lr": partial(architectures_sweep_config, task="teacher"),
    "architectures-regression-lr": partial(architectures_sweep_config, task="regression"),
    # the main runs of Fig. 4A/4B: their rates from the sweeps' entries above (NEEDS)
    "architectures-teacher": partial(architectures_main_config, task="teacher"),
    "architectures-regression": partial(architectures_main_config, task="regression"),
    "fig4b-setup": setup_check_config,
    "fig4b-setup-lru-init": setup_check_lru_init_config,
    "fig4b-setup-pilots": pilot_set_config,
    "associative-recall": associative_recall_config,
    "associative-recall-prune": prune_budget_config,
    "optimiser-comparison": optimiser_comparison_config,
    "optimiser-comparison-members": optimiser_members_config,
    "optimiser-comparison-new-seeds": optimiser_new_seeds_config,
    # the counts' sensitivity to the optimiser: one experiment per SENSITIVITY setting
    **{f"teacher-identification-{s}": partial(sensitivity_config, setting=s) for s in SENSITIVITY},
    # beyond the paper: teacher identification with lam <= lam_max, a run per (T, lam_max)
    **{
        f"capped-memory-T{T}-lam{c:g}": partial(capped_memory_config, T=T, lam_max=c)
        for T in LENGTHS
        for c in CAPS
    },
}


#: the runs of the central learning claims, most central first: Fig. 3A, Fig. 3B, then Fig. 4A
#: and 4B, each after its rate search
CENTRAL_CLAIMS = (
    "how-many-neurons-A",
    "how-many-neurons-B",
    "architectures-teacher-lr",
    "architectures-teacher",
    "architectures-regression-lr",
    "architectures-regression",
)

#: experiment name -> the experiment whose entry its config reads (an input of the config, such
#: as the rates a learning-rate sweep chose): ``experiment_config`` obtains that entry first
NEEDS: dict[str, str] = {
    "architectures-teacher": "architectures-teacher-lr",
    "architectures-regression": "architectures-regression-lr",
}


_SENSITIVITY_WORDS = {
    "chosen": "at the chosen lr and weight decay",
    "wd-half": "at half the weight decay",
    "wd-double": "at twice the weight decay",
    "lr-half": "at half the learning rate",
    "lr-double": "at twice the learning rate",
}

#: experiment name -> what it trains, in one line (``python -m gated_attention list``)
DESCRIPTIONS: dict[str, str] = {
    "teacher-identification": "Sec. 4.1: students of d = 4 teachers, reverse-engineered (Fig. 2)",
    "how-many-neurons-A": "Fig. 3A: the loss against the student's size, d = 4 teachers",
    "how-many-neurons-B": "Fig. 3B: the same for d = 12 teachers of rank 6",
    "in-context-regression": "Sec. 5.2: gated RNNs on in-context regression (Table 2, Fig. 3C)",
    "architectures-teacher-lr": "Fig. 4A's learning-rate search: every family at every rate",
    "architectures-regression-lr": "Fig. 4B's learning-rate search: every family at every rate",
    "architectures-teacher": "Fig. 4A: every family at matched sizes on the teacher-student task",
    "architectures-regression": "Fig. 4B: every family at matched sizes on in-context regression",
    "fig4b-setup": "Fig. 4B's setup check: does each family learn regression at all (ours)",
    "fig4b-setup-lru-init": "the setup check of the LRU families with a rescaled init (ours)",
    "fig4b-setup-pilots": "the setup check's pilots: LRU variants at several budgets (ours)",
    "associative-recall": "App. D.3: input-output and side gating on associative recall (Fig. 7)",
    "associative-recall-prune": "App. D.3's side gating with a decay budget that prunes (ours)",
    "optimiser-comparison": "one recorded student continued with three optimisers (ours)",
    "optimiser-comparison-members": "the same over the five recorded members (ours)",
    "optimiser-comparison-new-seeds": "the same comparison on new seeds (ours)",
    **{
        f"teacher-identification-{s}": f"Sec. 4.1's students {words} (ours)"
        for s, words in _SENSITIVITY_WORDS.items()
    },
    **{
        f"capped-memory-T{T}-lam{c:g}": f"Sec. 4.1's students at T = {T} with lam <= {c:g} (ours)"
        for T in LENGTHS
        for c in CAPS
    },
}


def experiment_config(name: str, profile: str, *, resolve: Callable[[Any], Any] = run) -> Any:
    """The config of experiment ``name`` in ``profile``; an unknown name is a ValueError. One of
    ``NEEDS`` reads the entry ``resolve(config)`` returns (default ``cache.run``)."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; expected one of {', '.join(EXPERIMENTS)}")
    if name in NEEDS:
        return EXPERIMENTS[name](profile, resolve=resolve)
    return EXPERIMENTS[name](profile)


def config_from_dict(d: dict) -> Any:
    """The config of a results entry's ``meta["config"]``; fields missing from ``d`` take
    today's defaults; a field the config class no longer has is a ValueError."""
    types = {  # the config classes a results entry can name, by class name
        cls.__qualname__: cls
        for cls in (
            TeacherStudentConfig,
            RegressionConfig,
            ArchitectureConfig,
            SetupCheckConfig,
            RecallConfig,
            OptimiserComparisonConfig,
            OptimiserMembersConfig,
            PilotConfig,
            PilotSetConfig,
        )
    }
    cls = types.get(d.get("type")) if isinstance(d, dict) else None
    if cls is None:
        got = d.get("type") if isinstance(d, dict) else d
        raise ValueError(f"unknown config type {got!r}; expected one of {', '.join(types)}")
    return rebuild_config(cls, d["fields"])
