"""A 1-layer LSTM in the shell of Sec. 4.3: linear embedding -> LSTM -> linear readout.

Glossary (code name -> symbol -> shape, E ensemble members, H = N = width):
    W_e, b_e    embedding u_t = W_e x_t + b_e                                   (E, H, d_in), (E, H)
    W_ih, b_ih  input weights of the four gates, stacked in PyTorch's order i, f, g, o
                                                                                (E, 4N, H), (E, 4N)
    W_hh, b_hh  recurrent weights of the four gates, same order                 (E, 4N, N), (E, 4N)
    c, h        cell state c_t and hidden state h_t, c_0 = h_0 = 0             (E, B, N)
    W_o, b_o    readout y_t = W_o h_t + b_o                        (E, d_out, N), (E, d_out)

PyTorch's gate equations (``torch.nn.LSTM``):
    i_t = sigmoid(W_ii u_t + b_ii + W_hi h_{t-1} + b_hi)      input gate
    f_t = sigmoid(W_if u_t + b_if + W_hf h_{t-1} + b_hf)      forget gate
    g_t = tanh(W_ig u_t + b_ig + W_hg h_{t-1} + b_hg)         cell candidate
    o_t = sigmoid(W_io u_t + b_io + W_ho h_{t-1} + b_ho)      output gate
    c_t = f_t * c_{t-1} + i_t * g_t,      h_t = o_t * tanh(c_t)

Width: width = N (the hidden size; the recurrent state (c, h) has 2N numbers) and the embedding
size H = width. Parameters of one member:
    H (d_in + 1) + 4N (H + N) + 8N + d_out (N + 1)    (embedding, LSTM, readout).
The LSTM part, 4N (H + N) + 8N, is what ``torch.nn.LSTM(H, N)`` counts (two bias vectors, as
PyTorch keeps them; only their sum matters).

Initialisation: embedding and readout as ``torch.nn.Linear``; LSTM weights and biases
U(-1/sqrt(N), 1/sqrt(N)), as ``torch.nn.LSTM``. Everything gets weight decay (no_decay = ()).

Two forms: ``forward`` projects the inputs of all t in one product and loops over t with one
batched product per step for the recurrent part, all members at once; ``reference`` loads each
member's weights into a ``torch.nn.LSTM`` (batch_first) and runs PyTorch's own forward, an
independent implementation (and differentiable: the weights go in through ``functional_call``).
"""

from __future__ import annotations

import torch

from .shell import Family, Params, compile_loop, init_gated_cell, linear, torch_cell_reference

__all__ = [
    "LSTM",
    "init",
    "forward",
    "compiled",
    "reference",
    "parameter_count_formula",
    "lstm_states",
]


def init(
    d_in: int,
    d_out: int,
    width: int,
    E: int,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
) -> Params:
    """Draw E members: nn.Linear's init for embedding/readout, nn.LSTM's for the cell."""
    return init_gated_cell(d_in, d_out, width, E, generator, dtype, gates=4)


def parameter_count_formula(d_in: int, d_out: int, width: int) -> int:
    """H (d_in + 1) + 4N (H + N) + 8N + d_out (N + 1), with H = N = width."""
    H = N = width
    return H * (d_in + 1) + 4 * N * (H + N) + 8 * N + d_out * (N + 1)


def lstm_states(u: torch.Tensor, params: Params) -> torch.Tensor:
    """The LSTM's hidden states h_t for embedded inputs u (E, B, T, H) -> (E, B, T, N)."""
    E, B, T, _ = u.shape
    N = params["W_hh"].shape[-1]
    pre = linear(u, params["W_ih"], params["b_ih"] + params["b_hh"])  # (E, B, T, 4N)
    h = u.new_zeros(E, B, N)
    c = u.new_zeros(E, B, N)
    hs = []
    for t in range(T):
        gates = pre[:, :, t] + torch.bmm(h, params["W_hh"].transpose(1, 2))  # (E, B, 4N)
        i, f, g, o = gates.chunk(4, dim=-1)  # PyTorch's order
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        hs.append(h)
    return torch.stack(hs, dim=2)


def forward(x: torch.Tensor, params: Params) -> torch.Tensor:
    """The fast ensemble form: x (E, B, T, d_in) -> y (E, B, T, d_out)."""
    u = linear(x, params["W_e"], params["b_e"])  # (E, B, T, H)
    return linear(lstm_states(u, params), params["W_o"], params["b_o"])


_compiled_states = compile_loop(lstm_states)


def compiled(x: torch.Tensor, params: Params) -> torch.Tensor:
    """``forward`` with the loop over t compiled (``compile_loop``): the same map, for long
    runs (``ArchitectureConfig.compile_cells``)."""
    u = linear(x, params["W_e"], params["b_e"])
    return linear(_compiled_states(u, params), params["W_o"], params["b_o"])


def reference(x: torch.Tensor, params: Params) -> torch.Tensor:
    """Each member through ``torch.nn.LSTM`` (batch_first), with its weights loaded."""
    return torch_cell_reference(x, params, torch.nn.LSTM)


LSTM = Family(
    name="lstm",
    label="LSTM",
    init=init,
    forward=forward,
    reference=reference,
    compiled=compiled,
)
