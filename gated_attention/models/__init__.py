"""Models: the teacher, the student and the other recurrent families the paper compares.

attention   Eq. (1): causal linear self-attention (the teacher)
gated_rnn   Eq. (2): the gated diagonal linear RNN (the student), reference and parallel forms
fast_path   the training engine's fused form of Eq. (2) (hand-written backward)
compiled_loss  the same loss and its gradients as one plain function (mode "compiled")
shell       embedding -> recurrent layer(s) -> readout, for an ensemble; the ``Family`` record
dense_rnn   Eq. (2) with a dense linear recurrence ("dense" in Fig. 4A)
lstm        a 1-layer LSTM in the shell of Sec. 4.3
gru         a 1-layer GRU in the shell of Sec. 4.3
lru         the LRU family of Sec. 4.3 / 5.3 (LRU, LRU In+Out, with an MLP), simplified
lru_pilots  the Fig. 4B setup pilots' LRU variants: normalised blocks, rescaled init (ours)
mamba       a Mamba-style selective layer (simplified, no convolution) in the shell
family_registry  every family above by name, in the shape the engine trains (Fig. 4A/4B)
padding     networks of one family at several widths as one ensemble (zero-padded, masks)
mamba_block the Mamba block as released (convolution, SiLU, low-rank Delta; ours, beyond the paper)
lru_block   the LRU block as released (GELU, GLU, skip, optional LayerNorm; ours, beyond the paper)
"""

from .attention import LinearSelfAttention, random_attention
from .family_registry import FAMILIES, family, width_for
from .gated_rnn import GatedRNN, gated_rnn_forward
from .shell import parameter_count

__all__ = [
    "FAMILIES",
    "family",
    "width_for",
    "GatedRNN",
    "LinearSelfAttention",
    "gated_rnn_forward",
    "parameter_count",
    "random_attention",
]
