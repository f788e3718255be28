"""The shell every architecture of Sec. 4.3 shares: linear embedding -> recurrent layer(s) ->
linear readout, written for an *ensemble* of E independent members (seeds of one size).

Glossary (code name -> meaning):
    E            ensemble members (independent networks trained in one computation)
    B, T         batch size, sequence length
    params       dict of (E, ...) tensors; a member's parameters are ``params[k][e]``
    Family       one architecture in the shape the engine trains
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass

import torch

Params = dict[str, torch.Tensor]


def linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """Each member's own affine map: x (E, ..., i), W (E, o, i), b (E, o) -> (E, ..., o)."""
    E = x.shape[0]
    y = torch.bmm(x.reshape(E, -1, x.shape[-1]), W.transpose(1, 2))  # (E, N, o)
    if b is not None:
        y = y + b[:, None, :]
    return y.reshape(*x.shape[:-1], W.shape[1])


def member(a: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A per-member vector a (E, n) viewed as (E, 1, ..., 1, n) to broadcast against ``like``."""
    return a.reshape(a.shape[0], *([1] * (like.dim() - 2)), a.shape[-1])


def init_linear(
    E: int,
    n_out: int,
    n_in: int,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
    *,
    bias: bool = True,
    scale: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """torch.nn.Linear's default draw for E members, U(-k, k) with k = scale / sqrt(n_in):
    W (E, n_out, n_in) and b (E, n_out) or None."""
    k = scale / math.sqrt(n_in)
    W = (torch.rand(E, n_out, n_in, generator=generator, dtype=torch.float64) * 2 - 1) * k
    b = None
    if bias:
        b = (torch.rand(E, n_out, generator=generator, dtype=torch.float64) * 2 - 1) * k
        b = b.to(dtype)
    return W.to(dtype), b


def init_gated_cell(
    d_in: int,
    d_out: int,
    width: int,
    E: int,
    generator: torch.Generator,
    dtype: torch.dtype,
    gates: int,
) -> Params:
    """Embedding, one LSTM (gates = 4) or GRU (gates = 3) cell in torch's layout, readout, drawn
    as nn.Linear and nn.LSTM / nn.GRU draw them (the cell U(-1/sqrt(N), 1/sqrt(N))); H = N =
    width. Shapes: the glossaries of ``models.lstm`` and ``models.gru``."""
    H = N = width
    P: Params = {}
    P["W_e"], P["b_e"] = init_linear(E, H, d_in, generator, dtype)
    # init_linear's bound is scale / sqrt(n_in): scale sqrt(H / N) gives 1 / sqrt(N)
    P["W_ih"], b_ih = init_linear(E, gates * N, H, generator, dtype, scale=(H / N) ** 0.5)
    P["W_hh"], b_hh = init_linear(E, gates * N, N, generator, dtype)
    P["b_ih"], P["b_hh"] = b_ih, b_hh
    P["W_o"], P["b_o"] = init_linear(E, d_out, N, generator, dtype)
    return P


def torch_cell_reference(x: torch.Tensor, params: Params, module: type) -> torch.Tensor:
    """The independent reference of ``init_gated_cell``'s models: each member's cell run by
    ``module`` (``torch.nn.LSTM`` or ``torch.nn.GRU``) via ``functional_call`` (differentiable)."""
    from torch.func import functional_call

    H, N = params["W_ih"].shape[-1], params["W_hh"].shape[-1]
    cell = module(H, N, batch_first=True, device=x.device, dtype=x.dtype)
    ys = []
    for e in range(x.shape[0]):
        u = x[e] @ params["W_e"][e].T + params["b_e"][e]  # (B, T, H)
        weights = {
            "weight_ih_l0": params["W_ih"][e],
            "weight_hh_l0": params["W_hh"][e],
            "bias_ih_l0": params["b_ih"][e],
            "bias_hh_l0": params["b_hh"][e],
        }
        h, _ = functional_call(cell, weights, (u,))  # (B, T, N)
        ys.append(h @ params["W_o"][e].T + params["b_o"][e])
    return torch.stack(ys)


#: the C++ compilers torch.compile's inductor can use on the CPU
CXX = ("g++", "c++", "clang++")


def compile_loop(fn: Callable) -> Callable:
    """``fn`` (states(u, params) or forward(x, params)) compiled by ``torch.compile`` on its first
    call, one graph per input shape (slow to compile: for long runs). Without a C++ compiler on
    the CPU, the first call raises a RuntimeError."""
    compiled = None

    def call(u: torch.Tensor, params: Params) -> torch.Tensor:
        nonlocal compiled
        if compiled is None:
            if u.device.type == "cpu" and not any(shutil.which(c) for c in CXX):
                raise RuntimeError(
                    f"a compiled cell loop needs a C++ compiler on the CPU ({', '.join(CXX)}: "
                    "none found); install one (e.g. apt install g++) or train without it "
                    "(ArchitectureConfig.compile_cells=False)"
                )
            compiled = torch.compile(fn, dynamic=False)
        return compiled(u, params)

    call.__name__ = call.__qualname__ = f"compiled_{fn.__name__}"
    call.__doc__ = f"``{fn.__name__}`` compiled (``compile_loop``)."
    return call


def parameter_count(params: Params) -> int:
    """Trainable numbers of one member (the leading ensemble dim dropped)."""
    return sum(v[0].numel() for v in params.values())


@dataclass(frozen=True)
class Family:
    """One architecture of Sec. 4.3 / 5.3 in the shape the engine trains.

    name       short id used in configs and results ("lstm", "lru", ...)
    label      how figures and tables name it
    init       init(d_in, d_out, width, E, generator, dtype) -> params (E, ...)
    forward    forward(x (E, B, T, d_in), params) -> y (E, B, T, d_out), the fast form
    reference  the same map as a plain loop over t (the definition the tests compare to)
    no_decay   parameter names without weight decay (recurrence parameters, as nu in Sec. 4.1)
    compiled   the fast form to train compiled (LSTM, GRU, the LRU families), else None
    """

    name: str
    label: str
    init: Callable[..., Params]
    forward: Callable[[torch.Tensor, Params], torch.Tensor]
    reference: Callable[[torch.Tensor, Params], torch.Tensor]
    no_decay: tuple[str, ...] = ()
    compiled: Callable[[torch.Tensor, Params], torch.Tensor] | None = None
