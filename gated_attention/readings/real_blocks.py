"""Readings of "The real blocks" in book/which_rnns_can_be_attention.md (ours, beyond the paper):
what each construction costs and its errors.

Glossary (code name -> symbol):
    d, d_v, d_k  the teacher's input, value and key sizes (here d_v = d_k = d)
    n            d_v d_k, the entries of the key-value matrix M_t
    D, N, R      inner channels, states per channel, dt_rank of a Mamba block
    H, N         width and hidden size of an LRU block"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import torch

from ..constructions import real_blocks
from ..constructions.gated_rnn import neuron_count
from ..constructions.gated_rnn import parameter_count as gated_parameter_count
from ..constructions.linearised import attention_output, random_inputs
from ..models import lru as lru_model
from ..models import lru_block, mamba_block
from ..models import mamba as mamba_model
from ..models.attention import random_attention
from .construction import scale_key


@dataclasses.dataclass(frozen=True)
class CostRow:
    """What one construction costs for a d -> d teacher."""

    construction: str
    layers: str
    size: str  # its widths, e.g. "n = 20, m = 16"
    parameters: int
    kind: str  # "exact", or the limit it reaches attention in


def cost_rows(d: int) -> list[CostRow]:
    """A ``CostRow`` per construction for a d -> d teacher (d_v = d_k = d)."""
    c, H = neuron_count("full", d), 2 * d
    rows = [
        CostRow(
            "gated RNN (Eq. 2, App. A)",
            "1",
            f"n = {c['n']}, m = {c['m']}",
            gated_parameter_count("full", d),
            "exact",
        ),
        CostRow(
            "Mamba-style, simplified (Table 3)",
            "1",
            f"H = {H}, N = {d}",
            mamba_model.parameter_count_formula(d, d, H, d),
            "exact",
        ),
    ]
    for bias, name in ((True, "Mamba block, with biases"), (False, "Mamba block, as released")):
        s = real_blocks.mamba_block_size(d, d, d, bias=bias)
        config = mamba_block.MambaBlockConfig(n_state=s["N"], dt_rank=s["R"], bias=bias)
        count = mamba_block.parameter_count_formula(d, d, s["D"], config)
        rows.append(CostRow(name, "1", f"D = {s['D']}, N = {s['N']}, R = {s['R']}", count, "exact"))
    H = d + 4 * d * d
    count = lru_model.closed_form_count("lru", d, d, H)
    rows.append(CostRow("LRU, simplified (Table 3)", "2", f"H = N = {H}", count, "limit eps^2"))
    s = real_blocks.lru_block_size(d, d, d)
    for norm, name, kind in (
        (None, "LRU block (GELU)", "limit eps^2"),
        ("layer", "LRU block (GELU, LayerNorm)", "limit eps^2, delta^2"),
    ):
        config = lru_block.LRUBlockConfig(layers=2, n_hidden=s["N"], norm=norm)
        count = lru_block.parameter_count_formula(d, d, s["H"], config)
        rows.append(CostRow(name, "2", f"H = {s['H']}, N = {s['N']}", count, kind))
    return rows


def exact_errors(ds: range = range(1, 9)) -> dict[int, tuple[float, float]]:
    """d -> (relative error as released, with biases) of the Mamba block's construction on
    ``random_attention(d, seed=d)`` (8 sequences of T = 32, float64)."""
    out = {}
    for d in ds:
        teacher = random_attention(d, seed=d)
        out[d] = tuple(real_blocks.mamba_block_error(teacher, bias=b) for b in (False, True))
    return out


def identity_rows(limit: float = 20.0) -> list[dict]:
    """One row per odd pair f: ``"gap"`` max |f(s) - f(-s) - s| for |s| <= limit (float64) and
    ``"sympy"`` the simplified residual; then "8 channels" (sympy only)."""
    s = torch.linspace(-limit, limit, 4001, dtype=torch.float64)
    symbolic = real_blocks.symbolic_odd_pairs()
    rows = [
        {"f": name, "gap": gap, "sympy": symbolic[name]}
        for name, gap in real_blocks.odd_pair_gaps(s).items()
    ]
    return rows + [{"f": "8 channels", "gap": None, "sympy": symbolic["8 channels"]}]


def growth_rows(teacher, scales: Sequence[float], *, eps: float = 1e-2) -> list[dict]:
    """max |out(a x)| / a per scale a (column ``scale_key(a)``; 2 sequences of T = 8) of attention
    and the LRU block's construction at ``eps`` without and with LayerNorm (delta = 1e-5)."""
    x = random_inputs(teacher.d, B=2, T=8)
    att = [float(attention_output(teacher, a * x).abs().max()) / a for a in scales]
    per_model = {"attention": att}
    for norm, delta, label in ((None, 1.0, "LRU block"), ("layer", 1e-5, "with LayerNorm")):
        P = real_blocks.lru_block_construction(teacher, eps, norm=norm, delta=delta)
        per_model[label] = real_blocks.growth(lru_block.forward, P, x, scales)
    return [
        {"model": label, **{scale_key(a): v for a, v in zip(scales, per_a, strict=True)}}
        for label, per_a in per_model.items()
    ]


@dataclasses.dataclass(frozen=True)
class LearningRow:
    """One family of a ``real_block_learning`` entry."""

    family: str
    width: int
    params: int
    losses: tuple[float, ...]  # held-out loss per seed
    median: float  # their median


def learning_rows(tensors: Mapping[str, torch.Tensor]) -> list[LearningRow]:
    """A ``LearningRow`` per family of a ``real_block_learning`` entry, in its order."""
    labels = ("Mamba-style, simplified", "Mamba block, as released")
    rows = []
    for k, label in enumerate(labels):
        losses = tensors["eval_loss"][k]
        width, count = int(tensors["widths"][k]), int(tensors["counts"][k])
        median = float(losses.quantile(0.5))
        rows.append(LearningRow(label, width, count, tuple(losses.tolist()), median))
    return rows


def learning_ratio(rows: Sequence[LearningRow]) -> float:
    """The real block's seed median over the simplified layer's (``learning_rows``)."""
    return rows[1].median / rows[0].median
