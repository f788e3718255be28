"""gated-attention: a runnable companion to "Gated recurrent neural networks discover attention"
(Zucchet et al., arXiv:2309.01775v2).

Modules (one concept each):
    attention      Eq. (1), causal linear self-attention (the teacher)
    gated_rnn      Eq. (2), the gated diagonal linear RNN (the student), reference and fast forms
    construction   App. A, RNN weights that implement an attention layer exactly
    experiments    profiles, frozen configs and the results cache
    scorecard      paper-vs-reproduced records
"""

from .attention import LinearSelfAttention, random_attention
from .construction import (
    VARIANTS,
    ConstructionError,
    attention_parameter_count,
    construct_rnn,
    neuron_count,
    parameter_count,
)
from .gated_rnn import GatedRNN, gated_rnn_forward
from .regression import InContextRegression, RegressionConfig
from .tasks import Task, TeacherStudentTask
from .training import TrainConfig, TrainResult, flush_denormals, train

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
    "RegressionConfig",
]
