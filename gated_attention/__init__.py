"""gated-attention: a runnable companion to "Gated recurrent neural networks discover attention"
(Zucchet et al., arXiv:2309.01775v2).

Wings (one concept per module; the map: the book's Reference page, "Architecture"), lowest first:
each imports only the wings above it in this list (``tests/test_wings.py`` checks it)
    atomic, _version  atomic file writes; the package's version
    models          Eq. (1) attention, Eq. (2) the gated RNN, its fast path, the other families
    constructions   App. A and B: weights that make an RNN implement attention
    tasks           teacher-student, in-context regression (with its GD step and theory)
    engine          training: loop, ensembles, data, checkpoints, device
    analysis        reverse engineering: pruning, lam groups, scores, polynomials, loss edges
    experiments     profiles, the results cache, recorded runs, one config per experiment
    readings        recorded runs read as typed rows, one module per claim
    report          the scorecard, the verdicts, the tables and the figures
    tools, sweep    command lines: the book, record a run; an experiment's jobs on a Dask cluster
This module, ``__main__`` and ``workbench`` (start there: train a student, identify what it
learned) sit above every wing.
"""

import os

import torch

# subnormal floats to zero before anything else runs a torch operation (torch's worker threads
# copy the setting when they start): the one global torch setting the import changes; why, and
# GATED_ATTENTION_NO_FLUSH=1 to skip it: ``engine.device.flush_denormals``.
if os.environ.get("GATED_ATTENTION_NO_FLUSH", "") in ("", "0"):
    torch.set_flush_denormal(True)

from ._version import __version__ as __version__  # noqa: E402 (the one version)
from .constructions import (  # noqa: E402 (after the flush above, on purpose)
    VARIANTS,
    ConstructionError,
    attention_parameter_count,
    construct_rnn,
    neuron_count,
    parameter_count,
)
from .engine import TrainConfig, TrainResult, train  # noqa: E402
from .models import GatedRNN, LinearSelfAttention, gated_rnn_forward, random_attention  # noqa: E402
from .tasks import InContextRegression, Task, TeacherStudentTask  # noqa: E402

__all__ = [
    "LinearSelfAttention",
    "random_attention",
    "GatedRNN",
    "gated_rnn_forward",
    "construct_rnn",
    "ConstructionError",
    "VARIANTS",
    "neuron_count",
    "parameter_count",
    "attention_parameter_count",
    "Task",
    "TeacherStudentTask",
    "TrainConfig",
    "TrainResult",
    "train",
    "InContextRegression",
]
