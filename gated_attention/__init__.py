"""gated-attention: a runnable companion to "Gated recurrent neural networks discover attention"
(Zucchet et al., arXiv:2309.01775v2).

Wings (one concept per module; the README's "Architecture" section has the map):
    models          Eq. (1) attention, Eq. (2) the gated RNN, its fast path, the other families
    constructions   App. A and B: weights that make an RNN implement attention
    tasks           teacher-student, in-context regression (with its GD step and theory)
    engine          training: loop, ensembles, data, checkpoints, device
    experiments     profiles, the results cache, recorded runs, one config per experiment
    analysis        reverse engineering: pruning, lam groups, scores, polynomials, transitions
    report          the scorecard and the plots
    tools           command lines: book, bench, record
"""

from .constructions import (
    VARIANTS,
    ConstructionError,
    attention_parameter_count,
    construct_rnn,
    neuron_count,
    parameter_count,
)
from .engine import TrainConfig, TrainResult, flush_denormals, train
from .models import GatedRNN, LinearSelfAttention, gated_rnn_forward, random_attention
from .tasks import InContextRegression, Task, TeacherStudentTask

# subnormal floats to zero, before torch's worker threads start (they copy the setting): the
# decaying weights of dead neurons otherwise make training several times slower (see there)
flush_denormals()

__version__ = "0.1.0"

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
