"""The printed checks and scorecard rows of the chapter "Which RNNs can be attention" (App. B,
Tables 3 and 4): what the constructions of ``constructions`` (Mamba-style, LSTM, GRU, LRU) do,
measured on a random teacher in float64. No training.

    NO_TRAINING          what the chapter trains (nothing, but one small run at its end)
    print_mamba_weights  where Table 3's Mamba-style weights hold the keys, queries and memory
    mamba_error_text     its largest error against attention, absolute and relative
    mamba_record         that error, scored (``table3.mamba_max_error``)
    print_gru_stack      the two-layer GRU's size, its weights' growth, and the same weights
                         run by ``torch.nn.GRU(num_layers=2)``
    gru_records          the two-layer GRU's error and slope, scored (``table3.gru*``)
    summary_markdown     Table 3 and 4 side by side: layers (paper, ours), error and slope

Glossary (code name -> paper symbol):
    eps      epsilon, the input scale of a linearised sigmoid (App. B)
    curves   construction label -> relative errors over ``eps``
    findings ``constructions.gru.gru_findings``: the GRU's Taylor terms and slopes
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from ..constructions import gru, linearised
from ..constructions.linearised import error_slope
from .construction_tables import weight_summary

__all__ = [
    "NO_TRAINING",
    "print_mamba_weights",
    "mamba_error_text",
    "mamba_record",
    "print_gru_stack",
    "gru_records",
    "summary_markdown",
]

NO_TRAINING = (
    "the constructions need no training: every profile builds the same weights;\n"
    "one small run of ours at the end trains to the profile"
)

#: torch.nn.GRU's names of the construction's weights
_TORCH_NAMES = {"W_ih": "weight_ih", "W_hh": "weight_hh", "b_ih": "bias_ih", "b_hh": "bias_hh"}


def print_mamba_weights(P: Mapping[str, torch.Tensor], teacher, d: int) -> None:
    """Print where the Mamba-style construction ``P`` (``mamba.mamba_construction(teacher)``)
    holds the teacher: the keys in B_t (times Delta_0), the queries in C_t, a decay of 1
    (A = -exp(A_log) = 0), and its channels, states, nonzero and largest finite weights."""
    Delta0 = torch.nn.functional.softplus(P["b_Delta"][0, 0])
    A = -P["A_log"][0].exp()
    print("keys in B_t:    ", torch.allclose(P["W_B"][0, :, d:] * Delta0, teacher.W_K, 0, 1e-15))
    print("queries in C_t: ", torch.equal(P["W_C"][0, :, d:], teacher.W_Q))
    print(f"A = -exp(A_log) = {A.abs().max().item():g} everywhere: exp(Delta A) = 1, no leak")
    nonzero, big = weight_summary(P)
    print(
        f"{P['W_e'].shape[1]} channels x {P['W_B'].shape[1]} states: {nonzero} nonzero "
        f"weights, largest finite |w| = {big:.2f}"
    )


def mamba_error_text(error: float, scale: float) -> str:
    """``max |y - y_att| = E on outputs up to S: relative E / S``."""
    return (
        f"max |y - y_att| = {error:.1e} on outputs up to {scale:.0f}: relative {error / scale:.1e}"
    )


def mamba_record(relative: float, *, profile: str):
    """The row ``table3.mamba_max_error``: the Mamba-style layer's relative error, scored."""
    from . import scorecard

    note = "d = 4 random teacher, A_log = -inf, 8 sequences of T = 32, float64"
    return scorecard.record("table3.mamba_max_error", relative, profile=profile, note=note)


def print_gru_stack(teacher, x: torch.Tensor) -> None:
    """Print the two-layer GRU construction's units per layer and largest weight at eps = 1e-2
    and 1e-3 (with the power of eps it grows as), then load its weights at eps = 1e-3 into
    PyTorch's ``torch.nn.GRU(num_layers=2)`` and print its relative error against attention
    on the inputs ``x`` (B, T, d)."""
    d = x.shape[-1]
    stack = {e: gru.gru_two_layer_construction(teacher, e) for e in (1e-2, 1e-3)}
    big = {e: weight_summary(s)[1] for e, s in stack.items()}
    N = stack[1e-2]["W_o"].shape[1]
    growth = error_slope(list(big), list(big.values()))
    print(
        f"{N} units per layer (2 d^2 + d); largest |w| = {big[1e-2]:.1e} at eps = 1e-2 and "
        f"{big[1e-3]:.1e} at 1e-3:\n  grows as eps^{growth:.2f}"
    )
    net = torch.nn.GRU(d, N, num_layers=2, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        for layer_index, layer in enumerate(stack[1e-3]["layers"]):
            for key, value in layer.items():
                getattr(net, f"{_TORCH_NAMES[key]}_l{layer_index}").copy_(value)
        y = net(x)[0] @ stack[1e-3]["W_o"].T
    error = linearised.relative_error(y, linearised.attention_output(teacher, x))
    print(f"torch.nn.GRU(num_layers=2) and the readout, eps = 1e-3: relative error {error:.1e}")


def gru_records(error: float, findings: Mapping, eps: Sequence[float], *, profile: str) -> list:
    """The rows ``table3.gru`` (the two-layer GRU's relative error at the largest ``eps``) and
    ``table3.gru_two_layer_error_slope`` (its slope over eps <= 1e-2, ``findings``), scored."""
    from . import scorecard

    slope = findings["two_layer_slope"]
    note = (
        f"relative error of y = M_t q_t from TWO stacked GRU layers at eps = {eps[0]:g} "
        f"(delta = eps^2, weights ~ eps^-4), falling as eps^2 (slope {slope:.2f} over eps <= "
        "1e-2): no exact construction; a two-layer small-weight limit exists (ours)"
    )
    return [
        scorecard.record("table3.gru", error, profile=profile, note=note),
        scorecard.record(
            "table3.gru_two_layer_error_slope",
            slope,
            profile=profile,
            note=(
                "two stacked GRU layers, delta = eps^2, eps <= 1e-2: a slope near 2 is a "
                "two-layer small-weight limit, not an exact construction"
            ),
        ),
    ]


def summary_markdown(
    curves: Mapping[str, Sequence[float]],
    mamba_error: float,
    gru_error: float,
    findings: Mapping,
    eps: Sequence[float],
) -> str:
    """A Markdown table, one row per architecture of Tables 3 and 4: the layers the paper needs,
    the layers of our check, the relative error at ``eps[0]`` and the slope of log error
    against log eps (``curves``: the linearised constructions' errors over ``eps``; the
    Mamba-style layer is exact, the GRU's slope is ``findings``' over eps <= 1e-2)."""
    slope = {name: f"{error_slope(eps, errors):.2f}" for name, errors in curves.items()}
    rows = [
        ("LRU (output GLU)", "2", "2 layers", "LRU, 2 layers"),
        ("LRU In+Out", "1", "1 layer", "LRU In+Out, 1 layer"),
        ("Mamba-style", "1, exact", "1 layer, exact", None),
        ("LSTM (Table 4)", "1", "1 layer", "LSTM, 1 layer"),
        ("GRU", "none, in any depth", "2 layers", "GRU"),
    ]
    lines = [
        f"| architecture | layers (paper) | layers (our check) | rel. error at eps = {eps[0]:g} "
        "| slope |",
        "|---|---|---|---|---|",
    ]
    for arch, paper, ours, key in rows:
        if key is None:
            error, s = mamba_error, "none (exact)"
        elif key == "GRU":
            error, s = gru_error, f"{findings['two_layer_slope']:.2f} (eps <= 1e-2)"
        else:
            error, s = curves[key][0], slope[key]
        lines.append(f"| {arch} | {paper} | {ours} | {error:.1e} | {s} |")
    return "\n".join(lines)
