"""The training engine: AdamW + cosine annealing for ensembles of networks (Sec. 4.1).

Modules (one job each):
    config        TrainConfig (the optimiser and engine settings), TrainResult, the schedule
    loop          ``train``: the training loop of one ensemble, fast and reference modes
    steps         one step object per path: fused Eq. (2), a model's forward, the reference
    losses        a step's loss: what it reads (LossSpec), the autograd paths' loss function
    loss_log      the loss curve, one window of steps at a time
    guards        what ``train`` refuses before a step, the watch for divergence and its error
    ensembles     stacking students of different sizes; ``train_by_size`` for size sweeps
    member_rates  each member of an ensemble at its own learning rate (``member_lrs``)
    data          drawing a chunk of training data per call, shared streams; ``DataFeed``
    checkpoints   saving and resuming a run
    device        the device choice, subnormal flushing, the GPU path (CUDA graph), hardware
"""

from .config import OPTIMISERS, TrainConfig, TrainResult, cosine_lr
from .data import sample_chunk, sample_chunk_neuron_major
from .device import DEVICE_ENV, flush_denormals, hardware, resolve_device
from .ensembles import (
    combine_ensembles,
    forward_macs,
    plan_ensembles,
    size_groups,
    stack_students,
    train_by_size,
    train_ensemble,
    unstack_students,
)
from .guards import NonFiniteLossError
from .loop import train

__all__ = [
    "DEVICE_ENV",
    "NonFiniteLossError",
    "OPTIMISERS",
    "TrainConfig",
    "TrainResult",
    "combine_ensembles",
    "cosine_lr",
    "flush_denormals",
    "forward_macs",
    "hardware",
    "plan_ensembles",
    "resolve_device",
    "sample_chunk",
    "sample_chunk_neuron_major",
    "size_groups",
    "stack_students",
    "train",
    "train_by_size",
    "train_ensemble",
    "unstack_students",
]
