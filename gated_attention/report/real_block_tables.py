"""The printed tables of the section "The real blocks" of the chapter which_rnns_can_be_attention
(ours, beyond the paper): what each construction costs, and its errors. No training: each
function builds weights, measures them, or prints what it is handed.

    cost_rows          channels, states and parameters of every construction for one teacher
                       size: the gated RNN, the simplified blocks of Table 3, the real blocks
    cost_markdown      those rows as a markdown table
    exact_errors       the Mamba block's relative error per d, without and with biases
    print_exact_errors those errors as aligned rows
    print_identities   the odd-pair identities, in float64 and by sympy
    print_scale_errors relative errors against a small parameter, with the log-log slope
    print_growth       max |out(a x)| / a of the LRU block's construction against attention's
    print_learning     the small training run of experiments.real_block_learning, per family;
                       returns the ratio of the seed medians (real block over simplified)

Glossary (code name -> symbol):
    d, d_v, d_k  the teacher's input, value and key sizes (here d_v = d_k = d)
    n            d_v d_k, the entries of the key-value matrix M_t
    D, N, R      inner channels, states per channel, dt_rank of a Mamba block
    H, N         width and hidden size of an LRU block
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from ..constructions import real_blocks
from ..constructions.gated_rnn import neuron_count
from ..constructions.gated_rnn import parameter_count as gated_parameter_count
from ..constructions.linearised import attention_output, error_slope, random_inputs
from ..models import lru as lru_model
from ..models import lru_block, mamba_block
from ..models import mamba as mamba_model
from ..models.attention import random_attention

__all__ = [
    "cost_rows",
    "cost_markdown",
    "exact_errors",
    "print_exact_errors",
    "print_identities",
    "print_scale_errors",
    "print_growth",
    "print_learning",
]


def cost_rows(d: int) -> list[tuple[str, str, str, int, str]]:
    """(construction, layers, size, parameters, kind) for a d -> d teacher (d_v = d_k = d)."""
    c = neuron_count("full", d)
    rows = [
        (
            "gated RNN (Eq. 2, App. A)",
            "1",
            f"n = {c['n']}, m = {c['m']}",
            gated_parameter_count("full", d),
            "exact",
        ),
    ]
    H = 2 * d
    rows.append(
        (
            "Mamba-style, simplified (Table 3)",
            "1",
            f"H = {H}, N = {d}",
            mamba_model.parameter_count_formula(d, d, H, d),
            "exact",
        )
    )
    return rows + _mamba_block_rows(d) + _lru_rows(d)


def _mamba_block_rows(d: int) -> list[tuple[str, str, str, int, str]]:
    """``cost_rows``'s Mamba blocks, with biases and as released."""
    rows = []
    for bias, name in ((True, "Mamba block, with biases"), (False, "Mamba block, as released")):
        s = real_blocks.mamba_block_size(d, d, d, bias=bias)
        config = mamba_block.MambaBlockConfig(n_state=s["N"], dt_rank=s["R"], bias=bias)
        rows.append(
            (
                name,
                "1",
                f"D = {s['D']}, N = {s['N']}, R = {s['R']}",
                mamba_block.parameter_count_formula(d, d, s["D"], config),
                "exact",
            )
        )
    return rows


def _lru_rows(d: int) -> list[tuple[str, str, str, int, str]]:
    """``cost_rows``'s LRUs: simplified (Table 3), and the block with and without LayerNorm."""
    n = d * d
    rows = []
    H = d + 4 * n
    rows.append(
        (
            "LRU, simplified (Table 3)",
            "2",
            f"H = N = {H}",
            lru_model.closed_form_count("lru", d, d, H),
            "limit eps^2",
        )
    )
    s = real_blocks.lru_block_size(d, d, d)
    for norm, name, kind in (
        (None, "LRU block (GELU)", "limit eps^2"),
        ("layer", "LRU block (GELU, LayerNorm)", "limit eps^2, delta^2"),
    ):
        config = lru_block.LRUBlockConfig(layers=2, n_hidden=s["N"], norm=norm)
        rows.append(
            (
                name,
                "2",
                f"H = {s['H']}, N = {s['N']}",
                lru_block.parameter_count_formula(d, d, s["H"], config),
                kind,
            )
        )
    return rows


def cost_markdown(d: int) -> str:
    """``cost_rows(d)`` as a markdown table."""
    lines = [
        f"| construction (d = {d}) | layers | size | parameters | exact or limit |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {a} | {b} | {c} | {p:,} | {k} |" for a, b, c, p, k in cost_rows(d)]
    return "\n".join(lines)


def exact_errors(ds: range = range(1, 9)) -> dict[int, tuple[float, float]]:
    """d -> (relative error as released, with biases) of the Mamba block's construction on
    ``random_attention(d, seed=d)`` (8 sequences of T = 32, float64)."""
    out = {}
    for d in ds:
        teacher = random_attention(d, seed=d)
        out[d] = tuple(real_blocks.mamba_block_error(teacher, bias=b) for b in (False, True))
    return out


def print_exact_errors(errors: Mapping[int, tuple[float, float]]) -> None:
    """The errors of ``exact_errors`` as three aligned rows (d, as released, with biases)."""
    print(f"{'d':<12}" + "".join(f"{d:>8d}" for d in errors))
    print(f"{'as released':<12}" + "".join(f"{e[0]:8.0e}" for e in errors.values()))
    print(f"{'with biases':<12}" + "".join(f"{e[1]:8.0e}" for e in errors.values()))


def print_identities(limit: float = 20.0) -> None:
    """max |f(s) - f(-s) - s| for |s| <= limit in float64, and sympy's simplified residuals."""
    s = torch.linspace(-limit, limit, 4001, dtype=torch.float64)
    symbolic = real_blocks.symbolic_odd_pairs()
    print(f"{'f':<12} {'float64 gap':>12}  sympy")
    for name, gap in real_blocks.odd_pair_gaps(s).items():
        print(f"{name:<12} {gap:12.1e}  {symbolic[name]}")
    print(f"{'8 channels':<12} {'':>12}  {symbolic['8 channels']}")


def print_scale_errors(
    rows: Mapping[str, Sequence[float]], scales: Sequence[float], name: str = "delta"
) -> None:
    """Relative errors against a small parameter ``name`` (one per entry of ``scales``) as
    aligned rows, with the least-squares log-log slope."""
    print(f"{name:<18}" + "".join(f"{e:>9.0e}" for e in scales) + "    slope")
    for label, errors in rows.items():
        slope = error_slope(scales, errors)
        print(f"{label:<18}" + "".join(f"{e:9.1e}" for e in errors) + f"{slope:9.2f}")


def print_growth(teacher, scales: Sequence[float], *, eps: float = 1e-2) -> None:
    """max |out(a x)| / a along x -> a x (2 sequences of T = 8) for attention and the LRU
    block's construction at ``eps``, without and with LayerNorm (delta = 1e-5)."""
    x = random_inputs(teacher.d, B=2, T=8)
    print(f"{'max|out(a x)| / a':<18}" + "".join(f"{a:>9.0e}" for a in scales))
    att = [float(attention_output(teacher, a * x).abs().max()) / a for a in scales]
    print(f"{'attention':<18}" + "".join(f"{v:9.1e}" for v in att))
    for norm, delta, label in ((None, 1.0, "LRU block"), ("layer", 1e-5, "with LayerNorm")):
        P = real_blocks.lru_block_construction(teacher, eps, norm=norm, delta=delta)
        per_a = real_blocks.growth(lru_block.forward, P, x, scales)
        print(f"{label:<18}" + "".join(f"{v:9.1e}" for v in per_a))


def print_learning(tensors: Mapping[str, torch.Tensor]) -> float:
    """One row per family of a ``real_block_learning`` entry (width, parameters, held-out loss
    per seed, seed median); returns the real block's median over the simplified layer's."""
    labels = ("Mamba-style, simplified", "Mamba block, as released")
    print(f"{'family':<25}{'width':>6}{'params':>7}  loss per seed      median")
    medians = []
    for k, label in enumerate(labels):
        losses = tensors["eval_loss"][k]
        medians.append(float(losses.quantile(0.5)))
        per_seed = " ".join(f"{v:.3f}" for v in losses.tolist())
        width, count = int(tensors["widths"][k]), int(tensors["counts"][k])
        print(f"{label:<25}{width:>6}{count:>7}  {per_seed:<18}{medians[-1]:.3f}")
    return medians[1] / medians[0]
