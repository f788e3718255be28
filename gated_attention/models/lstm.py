"""A 1-layer LSTM in the shell of Sec. 4.3: linear embedding -> LSTM -> linear readout.

Glossary (code name -> symbol -> shape, E ensemble members, H = N = width):
    W_e, b_e    embedding u_t = W_e x_t + b_e                                   (E, H, d_in), (E, H)
    W_ih, b_ih  input weights of the gates, in PyTorch's order i, f, g, o        (E, 4N, H), (E, 4N)
    W_hh, b_hh  recurrent weights of the gates, same order                      (E, 4N, N), (E, 4N)
    c, h        cell state c_t and hidden state h_t, c_0 = h_0 = 0             (E, B, N)
    W_o, b_o    readout y_t = W_o h_t + b_o                        (E, d_out, N), (E, d_out)

PyTorch's gate equations (``torch.nn.LSTM``):
    i_t = sigmoid(W_ii u_t + b_ii + W_hi h_{t-1} + b_hi)      input gate
    f_t = sigmoid(W_if u_t + b_if + W_hf h_{t-1} + b_hf)      forget gate
    g_t = tanh(W_ig u_t + b_ig + W_hg h_{t-1} + b_hg)         cell candidate
    o_t = sigmoid(W_io u_t + b_io + W_ho h_{t-1} + b_ho)      output gate
    c_t = f_t * c_{t-1} + i_t * g_t,      h_t = o_t * tanh(c_t)

The state (c, h) has 2N numbers; everything gets weight decay. Forms: ``forward`` (one batched
product per step, all members), ``compiled`` (that loop compiled, backward by hand:
``LSTMScan``), ``reference`` (``torch.nn.LSTM``).
"""

from __future__ import annotations

import torch

from .shell import Family, Params, compile_loop, init_gated_cell, linear, torch_cell_reference


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


class LSTMScan(torch.autograd.Function):
    """The recurrence of ``lstm_states`` with a hand-written backward (fewer kernels compiled
    than autograd's; equal up to rounding): pre (E, B, T, 4N) (the gates' input part with both
    biases), W_hh (E, 4N, N) -> h (E, B, T, N).
    """

    @staticmethod
    def forward(ctx, pre: torch.Tensor, W_hh: torch.Tensor) -> torch.Tensor:
        E, B, T, _ = pre.shape
        N = W_hh.shape[-1]
        h = c = pre.new_zeros(E, B, N)
        hs, cs, acts = [], [c], ([], [], [], [])
        for t in range(T):  # h_0 = 0: the first step's gates are its inputs'
            gates = pre[:, :, t] if t == 0 else pre[:, :, t] + torch.bmm(h, W_hh.transpose(1, 2))
            i, f, g, o = gates.chunk(4, dim=-1)
            i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
            c = f * c + i * g
            h = o * torch.tanh(c)
            hs.append(h)
            cs.append(c)
            for saved, a in zip(acts, (i, f, g, o), strict=True):
                saved.append(a)  # each gate a stack of its own: written where it is computed
        H = torch.stack(hs, dim=2)
        gate_stacks = (torch.stack(a, dim=2) for a in acts)
        ctx.save_for_backward(W_hh, H, torch.stack(cs, dim=2), *gate_stacks)
        return H

    @staticmethod
    def backward(ctx, dH: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        W_hh, H, C, I, F, G, O = ctx.saved_tensors  # C[:, :, t + 1] = c_t, C[:, :, 0] = c_0 = 0
        E, B, T, N = H.shape
        dh_next, dc_next = dH.new_zeros(E, B, N), dH.new_zeros(E, B, N)
        dhs, dcs = [dH] * T, [dH] * T
        for t in reversed(range(T)):
            i, f, g, o = I[:, :, t], F[:, :, t], G[:, :, t], O[:, :, t]
            tanh_c = torch.tanh(C[:, :, t + 1])
            dh = dH[:, :, t] + dh_next
            dc = dc_next + dh * o * (1 - tanh_c * tanh_c)
            dhs[t], dcs[t] = dh, dc
            dc_next = dc * f
            if t > 0:
                dgates = _gate_grads(dh, dc, (i, f, g, o), C[:, :, t], tanh_c)  # (E, B, 4N)
                dh_next = torch.bmm(dgates, W_hh)
        # the gates' gradients of all t at once from the stacked dh_t, dc_t: one loop, where
        # stacking each step's would copy each
        dpre = _gate_grads(
            torch.stack(dhs, dim=2), torch.stack(dcs, dim=2), (I, F, G, O), C[:, :, :-1],
            torch.tanh(C[:, :, 1:]),
        )  # fmt: skip
        h_prev = torch.cat([H.new_zeros(E, B, 1, N), H[:, :, :-1]], dim=2).reshape(E, B * T, N)
        dW_hh = torch.bmm(dpre.reshape(E, B * T, 4 * N).transpose(1, 2), h_prev)
        return dpre, dW_hh


def _gate_grads(dh, dc, acts, c_prev, tanh_c) -> torch.Tensor:
    """d loss / d gates before the nonlinearities, (..., 4N)."""
    i, f, g, o = acts
    return torch.cat(
        [
            dc * g * i * (1 - i),
            dc * c_prev * f * (1 - f),
            dc * i * (1 - g * g),
            dh * tanh_c * o * (1 - o),
        ],
        dim=-1,
    )


def lstm_states_scan(u: torch.Tensor, params: Params) -> torch.Tensor:
    """``lstm_states`` through ``LSTMScan`` (its hand-written backward)."""
    pre = linear(u, params["W_ih"], params["b_ih"] + params["b_hh"])  # (E, B, T, 4N)
    return LSTMScan.apply(pre, params["W_hh"])


_compiled_states = compile_loop(lstm_states_scan)


def compiled(x: torch.Tensor, params: Params) -> torch.Tensor:
    """``forward`` with the loop compiled and ``LSTMScan``'s backward, for long runs
    (``ArchitectureConfig.compile_cells``)."""
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
