"""Readings of "Which RNNs can be attention" (App. B, Tables 3 and 4): what the Mamba-style, LSTM,
GRU and LRU constructions hold and how far they are from attention (random teacher, float64).

Glossary (code name -> paper symbol):
    eps      epsilon, the input scale of a linearised sigmoid (App. B)
    curves   construction label -> relative errors over ``eps``
    findings ``constructions.gru.gru_findings``: the GRU's Taylor terms and slopes"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import torch

from ..constructions import gru, linearised
from ..constructions.linearised import error_slope
from .construction import weight_summary

#: torch.nn.GRU's names of the construction's weights
_TORCH_NAMES = {"W_ih": "weight_ih", "W_hh": "weight_hh", "b_ih": "bias_ih", "b_hh": "bias_hh"}


@dataclasses.dataclass(frozen=True)
class MambaWeights:
    """Where a Mamba-style construction holds the teacher (``mamba_weights``)."""

    keys_in_b: bool  # W_B[:, d:] Delta_0 is W_K (to 1e-15)
    queries_in_c: bool  # W_C[:, d:] is W_Q
    decay: float  # max |A| = max exp(A_log): 0 means exp(Delta A) = 1, no leak
    channels: int
    states: int
    nonzero: int  # nonzero weights
    largest: float  # largest finite |weight|


def mamba_weights(P: Mapping[str, torch.Tensor], teacher, d: int) -> MambaWeights:
    """The ``MambaWeights`` of ``P = mamba.mamba_construction(teacher)``."""
    Delta0 = torch.nn.functional.softplus(P["b_Delta"][0, 0])
    A = -P["A_log"][0].exp()
    keys = torch.allclose(P["W_B"][0, :, d:] * Delta0, teacher.W_K, 0, 1e-15)
    queries = torch.equal(P["W_C"][0, :, d:], teacher.W_Q)
    channels, states = P["W_e"].shape[1], P["W_B"].shape[1]
    return MambaWeights(keys, queries, A.abs().max().item(), channels, states, *weight_summary(P))


@dataclasses.dataclass(frozen=True)
class GruStack:
    """The two-layer GRU construction (``gru_stack``)."""

    units: int  # units per layer (2 d^2 + d)
    largest_1e2: float  # largest |weight| at eps = 1e-2
    largest_1e3: float  # at eps = 1e-3
    growth: float  # the power of eps the largest weight grows as
    torch_error: float  # relative error of torch.nn.GRU(num_layers=2) at eps = 1e-3


def gru_stack(teacher, x: torch.Tensor) -> GruStack:
    """The ``GruStack`` of the two-layer GRU construction; its torch error is on ``x`` (B, T, d)."""
    d = x.shape[-1]
    stack = {e: gru.gru_two_layer_construction(teacher, e) for e in (1e-2, 1e-3)}
    big = {e: weight_summary(s)[1] for e, s in stack.items()}
    N = stack[1e-2]["W_o"].shape[1]
    growth = error_slope(list(big), list(big.values()))
    net = torch.nn.GRU(d, N, num_layers=2, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        for layer_index, layer in enumerate(stack[1e-3]["layers"]):
            for key, value in layer.items():
                getattr(net, f"{_TORCH_NAMES[key]}_l{layer_index}").copy_(value)
        y = net(x)[0] @ stack[1e-3]["W_o"].T
    error = linearised.relative_error(y, linearised.attention_output(teacher, x))
    return GruStack(N, big[1e-2], big[1e-3], growth, error)


@dataclasses.dataclass(frozen=True)
class SummaryRow:
    """One architecture of Tables 3 and 4 (``summary_rows``)."""

    architecture: str
    paper: str  # the layers the paper needs
    ours: str  # the layers of our check
    error: float  # relative error at the largest eps (eps[0])
    slope: float | None  # of log error against log eps; None: exact
    fit: str  # the eps the slope is fitted over


def summary_rows(
    curves: Mapping[str, Sequence[float]],
    mamba_error: float,
    gru_error: float,
    findings: Mapping,
    eps: Sequence[float],
) -> list[SummaryRow]:
    """A ``SummaryRow`` per architecture of Tables 3 and 4 (the GRU's slope: ``findings``')."""
    every = f"eps = {eps[0]:g}..{eps[-1]:g}"
    rows = []
    for arch, paper, ours, key in (
        ("LRU (output GLU)", "2", "2 layers", "LRU, 2 layers"),
        ("LRU In+Out", "1", "1 layer", "LRU In+Out, 1 layer"),
        ("Mamba-style", "1, exact", "1 layer, exact", None),
        ("LSTM (Table 4)", "1", "1 layer", "LSTM, 1 layer"),
        ("GRU", "none, in any depth", "2 layers", "GRU"),
    ):
        if key is None:
            error, slope, fit = mamba_error, None, "-"
        elif key == "GRU":
            error, slope, fit = gru_error, findings["two_layer_slope"], "eps <= 1e-2"
        else:
            error, slope, fit = curves[key][0], error_slope(eps, curves[key]), every
        rows.append(SummaryRow(arch, paper, ours, error, slope, fit))
    return rows
