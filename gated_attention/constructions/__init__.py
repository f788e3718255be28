"""Constructions: weights that make an RNN implement a given linear self-attention layer.

gated_rnn          App. A: the gated RNN of Eq. (2), exactly (full, symmetric, low-rank, side)
symbolic           the sympy proofs and float64 checks of the App. A constructions
polynomial_ring    Eq. (1) and Eq. (2) evaluated exactly in a sparse polynomial ring
compressed_output  beyond the paper: d(d+1)/2 output-gating neurons for a symmetric M
capped_memory      beyond the paper: lam <= lam_max < 1, its error law, banks of neurons
lru                App. B.1, Table 3: 2-layer LRU and 1-layer LRU In+Out (linearised GLUs)
mamba              App. B.2, Table 3: one Mamba-style layer (side gating), exactly
real_blocks        beyond the paper: the real Mamba block exactly, two real LRU blocks in a limit
lstm               App. B.3, Table 4: one LSTM layer (linearised gates)
gru                App. B.4: what a GRU's gates can and cannot multiply
linearised         the error-against-eps slope of the linearised constructions
recall_networks    App. D.3: hand-built associative-recall networks (attention, squared difference)
"""

from .gated_rnn import (
    VARIANTS,
    ConstructionError,
    attention_parameter_count,
    construct_rnn,
    neuron_count,
    parameter_count,
)

__all__ = [
    "VARIANTS",
    "ConstructionError",
    "attention_parameter_count",
    "construct_rnn",
    "neuron_count",
    "parameter_count",
]
