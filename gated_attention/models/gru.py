"""A 1-layer GRU in the shell of Sec. 4.3: linear embedding -> GRU -> linear readout.

Glossary (code name -> symbol -> shape, E ensemble members, H = N = width):
    W_e, b_e    embedding u_t = W_e x_t + b_e                                   (E, H, d_in), (E, H)
    W_ih, b_ih  input weights of the gates, in PyTorch's order r, z, n           (E, 3N, H), (E, 3N)
    W_hh, b_hh  recurrent weights of the gates, same order                      (E, 3N, N), (E, 3N)
    h           hidden state h_t, h_0 = 0                                       (E, B, N)
    W_o, b_o    readout y_t = W_o h_t + b_o                        (E, d_out, N), (E, d_out)

PyTorch's gate equations (``torch.nn.GRU``):
    r_t = sigmoid(W_ir u_t + b_ir + W_hr h_{t-1} + b_hr)              reset gate
    z_t = sigmoid(W_iz u_t + b_iz + W_hz h_{t-1} + b_hz)              update gate
    n_t = tanh(W_in u_t + b_in + r_t * (W_hn h_{t-1} + b_hn))         candidate
    h_t = (1 - z_t) * n_t + z_t * h_{t-1}

Everything gets weight decay. Forms: ``forward`` (one batched product per step, all members),
``compiled`` (that loop compiled, backward by hand: ``GRUScan``), ``reference`` (``torch.nn.GRU``).
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
    """Draw E members: nn.Linear's init for embedding/readout, nn.GRU's for the cell."""
    return init_gated_cell(d_in, d_out, width, E, generator, dtype, gates=3)


def parameter_count_formula(d_in: int, d_out: int, width: int) -> int:
    """H (d_in + 1) + 3N (H + N) + 6N + d_out (N + 1), with H = N = width."""
    H = N = width
    return H * (d_in + 1) + 3 * N * (H + N) + 6 * N + d_out * (N + 1)


def gru_states(u: torch.Tensor, params: Params) -> torch.Tensor:
    """The GRU's hidden states h_t for layer inputs u (E, B, T, H) -> (E, B, T, N)."""
    E, B, T, _ = u.shape
    N = params["W_hh"].shape[-1]
    pre = linear(u, params["W_ih"], params["b_ih"])  # (E, B, T, 3N), all t in one product
    h = u.new_zeros(E, B, N)
    hs = []
    for t in range(T):
        rec = linear(h, params["W_hh"], params["b_hh"])  # (E, B, 3N)
        a_r, a_z, a_n = pre[:, :, t].chunk(3, dim=-1)  # PyTorch's order r, z, n
        h_r, h_z, h_n = rec.chunk(3, dim=-1)
        r = torch.sigmoid(a_r + h_r)
        z = torch.sigmoid(a_z + h_z)
        n = torch.tanh(a_n + r * h_n)  # b_hn stays inside the reset gate's product
        h = (1 - z) * n + z * h
        hs.append(h)
    return torch.stack(hs, dim=2)


def forward(x: torch.Tensor, params: Params) -> torch.Tensor:
    """The fast ensemble form: x (E, B, T, d_in) -> y (E, B, T, d_out)."""
    u = linear(x, params["W_e"], params["b_e"])  # (E, B, T, H)
    return linear(gru_states(u, params), params["W_o"], params["b_o"])


class GRUScan(torch.autograd.Function):
    """The recurrence of ``gru_states`` with a hand-written backward (fewer kernels compiled than
    autograd's; equal up to rounding): pre (E, B, T, 3N) (the gates' input part with b_ih),
    W_hh (E, 3N, N), b_hh (E, 3N) -> h (E, B, T, N).
    """

    @staticmethod
    def forward(ctx, pre: torch.Tensor, W_hh: torch.Tensor, b_hh: torch.Tensor) -> torch.Tensor:
        E, B, T, _ = pre.shape
        N = W_hh.shape[-1]
        h = pre.new_zeros(E, B, N)
        hs, saved = [], ([], [], [], [])
        for t in range(T):
            if t == 0:
                rec = b_hh[:, None, :].expand(E, B, 3 * N)
            else:
                rec = torch.bmm(h, W_hh.transpose(1, 2)) + b_hh[:, None, :]  # (E, B, 3N)
            a_r, a_z, a_n = pre[:, :, t].chunk(3, dim=-1)
            h_r, h_z, h_n = rec.chunk(3, dim=-1)
            r, z = torch.sigmoid(a_r + h_r), torch.sigmoid(a_z + h_z)
            n = torch.tanh(a_n + r * h_n)
            h = (1 - z) * n + z * h
            hs.append(h)
            for stack, a in zip(saved, (r, z, n, h_n), strict=True):
                stack.append(a)  # each a stack of its own: written where it is computed
        H = torch.stack(hs, dim=2)
        ctx.save_for_backward(W_hh, H, *(torch.stack(a, dim=2) for a in saved))
        return H

    @staticmethod
    def backward(ctx, dH: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        W_hh, H, *S = ctx.saved_tensors  # the stacks of r, z, n and h_n
        E, B, T, N = H.shape
        dh_next = dH.new_zeros(E, B, N)
        dhs = [dH] * T
        for t in reversed(range(T)):
            dh = dH[:, :, t] + dh_next
            dhs[t] = dh
            if t > 0:
                acts = [a[:, :, t] for a in S]
                _, drec = _gate_grads(dh, acts, H[:, :, t - 1])  # (E, B, 3N)
                dh_next = dh * acts[1] + torch.bmm(drec, W_hh)
        # the gradients of all t at once from the stacked dh_t: one loop, where stacking each
        # step's would copy each
        h_prev = torch.cat([H.new_zeros(E, B, 1, N), H[:, :, :-1]], dim=2)
        dpre, drec = _gate_grads(torch.stack(dhs, dim=2), S, h_prev)  # (E, B, T, 3N) each
        drec = drec.reshape(E, B * T, 3 * N)
        dW_hh = torch.bmm(drec.transpose(1, 2), h_prev.reshape(E, B * T, N))
        return dpre, dW_hh, drec.sum(dim=1)


def _gate_grads(dh, acts, h_prev) -> tuple[torch.Tensor, torch.Tensor]:
    """d loss / d (a_r, a_z, a_n) and d loss / d rec (rec = W_hh h_{t-1} + b_hh), (..., 3N) each."""
    r, z, n, h_n = acts
    da_n = dh * (1 - z) * (1 - n * n)  # d loss / d (a_n + r h_n)
    da_r = da_n * h_n * r * (1 - r)
    da_z = dh * (h_prev - n) * z * (1 - z)
    return torch.cat([da_r, da_z, da_n], dim=-1), torch.cat([da_r, da_z, da_n * r], dim=-1)


def gru_states_scan(u: torch.Tensor, params: Params) -> torch.Tensor:
    """``gru_states`` through ``GRUScan`` (its hand-written backward)."""
    pre = linear(u, params["W_ih"], params["b_ih"])  # (E, B, T, 3N)
    return GRUScan.apply(pre, params["W_hh"], params["b_hh"])


_compiled_states = compile_loop(gru_states_scan)


def compiled(x: torch.Tensor, params: Params) -> torch.Tensor:
    """``forward`` with the loop compiled and ``GRUScan``'s backward, for long runs
    (``ArchitectureConfig.compile_cells``)."""
    u = linear(x, params["W_e"], params["b_e"])
    return linear(_compiled_states(u, params), params["W_o"], params["b_o"])


def reference(x: torch.Tensor, params: Params) -> torch.Tensor:
    """Each member through ``torch.nn.GRU`` (batch_first), with its weights loaded."""
    return torch_cell_reference(x, params, torch.nn.GRU)


GRU = Family(
    name="gru",
    label="GRU",
    init=init,
    forward=forward,
    reference=reference,
    compiled=compiled,
)
