"""Experiments: one module per experiment owning its config, the profiles, the results cache and
the recorded runs. Data flow: ``config -> run(config) -> results entry -> chapter``.

    protocol                 what an experiment says about its training: jobs, train_job, assemble
    runner                   runs jobs in process, side by side on a GPU or on a Dask cluster
                             (``sweep``); a campaign's order and time budget
    side_by_side             several of a run's jobs at once on a GPU, each on its own stream
    profiles                 smoke / quick / paper, and the seeds of a run's random streams
    cache                    ``run(config)``: compute once, load afterwards
    code_key                 which source a result depends on: the import closure of its config
    recorded_runs            results entries of long runs shipped with the package
    teacher_student          the teacher-student config (Sec. 4.1-4.2)
    teacher_identification   its config for Sec. 4.1 (Fig. 2, Table 1)
    how_many_neurons         its configs for Sec. 4.2 (Fig. 3A/B)
    in_context_regression    Sec. 5.2 (Table 2, Fig. 3C)
    architectures            Sec. 4.3 and 5.3 (Fig. 4A/B): every family at matched sizes
    families_in_context      ours: does each family of Fig. 4B learn in-context regression?
    setup_pilots             ours: short-budget pilots of why a family does not
    associative_recall       App. D.3 (Fig. 7): input-output and side gating on associative recall
    capped_memory            ours: teacher identification with lam capped below 1
    optimiser_comparison     ours: a recorded Sec. 4.1 network continued with three optimisers
    optimiser_members        ours: the same over the paper-budget members, and on new seeds
    registry                 every experiment by name
    presets                  named training settings of the book's experiments, for one's own runs
    cpu_budget               the longest run a 2-hour CPU sitting affords, per learning claim
    robustness               ours: Fig. 3A at the CPU budget with one of our choices changed
    real_block_learning      ours: the real Mamba block trained beside the simplified layer
"""

from .architectures import ArchitectureConfig, architectures_config, architectures_sweep_config
from .associative_recall import RecallConfig, associative_recall_config
from .cache import RunResult, code_hash, config_hash, entry_path, run
from .families_in_context import SetupCheckConfig, setup_check_config
from .how_many_neurons import PANELS, how_many_neurons_config
from .in_context_regression import RegressionConfig, regression_config
from .optimiser_comparison import OptimiserComparisonConfig, optimiser_comparison_config
from .optimiser_members import (
    OptimiserMembersConfig,
    optimiser_members_config,
    optimiser_new_seeds_config,
)
from .profiles import PROFILES, check_profile, derive_seed
from .protocol import Experiment, Job
from .recorded_runs import (
    RECORDED_ROOT,
    recorded,
    recorded_match,
    recorded_names,
    run_or_recorded,
)
from .registry import EXPERIMENTS, architectures_main_config, config_from_dict, experiment_config
from .setup_pilots import PilotConfig, PilotSetConfig, pilot_configs, pilot_set_config
from .teacher_identification import (
    SENSITIVITY,
    sensitivity_config,
    teacher_identification_config,
)
from .teacher_student import TeacherStudentConfig

__all__ = [
    "ArchitectureConfig",
    "architectures_config",
    "architectures_main_config",
    "architectures_sweep_config",
    "associative_recall_config",
    "EXPERIMENTS",
    "Experiment",
    "Job",
    "PANELS",
    "PilotConfig",
    "PilotSetConfig",
    "PROFILES",
    "RECORDED_ROOT",
    "OptimiserComparisonConfig",
    "OptimiserMembersConfig",
    "RecallConfig",
    "RegressionConfig",
    "RunResult",
    "SetupCheckConfig",
    "TeacherStudentConfig",
    "check_profile",
    "code_hash",
    "config_from_dict",
    "config_hash",
    "derive_seed",
    "entry_path",
    "experiment_config",
    "how_many_neurons_config",
    "optimiser_comparison_config",
    "optimiser_members_config",
    "optimiser_new_seeds_config",
    "pilot_configs",
    "pilot_set_config",
    "recorded",
    "recorded_match",
    "recorded_names",
    "run_or_recorded",
    "regression_config",
    "run",
    "teacher_identification_config",
    "SENSITIVITY",
    "sensitivity_config",
    "setup_check_config",
]
