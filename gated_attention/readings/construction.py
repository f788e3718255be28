"""Readings of the construction chapters (App. A: "The construction", "Compressions"; App. B):
what a construction costs and how far it is from attention, as rows of numbers.

Glossary (code name -> symbol):
    n, m     hidden neurons, output-gating neurons of the gated RNN
    r        the teacher's rank (r_V = r_KQ = r; None: full rank d)
    eps      the input scale epsilon of a linearised construction (App. B)"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import torch

from ..constructions.gated_rnn import VARIANTS, neuron_count, parameter_count
from ..constructions.linearised import error_slope


def weight_summary(params: Mapping) -> tuple[int, float]:
    """(nonzero weights, largest finite |weight|) of tensors nested in dicts and lists."""
    stack = list(params.values())
    tensors = []
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            tensors.append(item)
        else:
            stack.extend(item.values() if isinstance(item, dict) else item)
    nonzero = sum(int((t != 0).sum()) for t in tensors)
    finite = [t[t.isfinite()] for t in tensors]  # Mamba's A_log = -inf is not a size
    return nonzero, max(float(t.abs().max()) for t in finite if t.numel())


def scale_key(scale: float) -> str:
    """The column of ``scale`` in the rows of ``error_curves``: ``1e-03`` for 0.001."""
    return f"{scale:.0e}"


def error_curves(rows: Mapping[str, Sequence[float]], scales: Sequence[float]) -> list[dict]:
    """One row per curve of ``rows`` (name -> an error per scale): ``"curve"``, the error at each
    scale (column ``scale_key(s)``) and the slope of log error against log scale (``"slope"``)."""
    out = []
    for name, errors in rows.items():
        row = {"curve": name}
        row.update({scale_key(s): e for s, e in zip(scales, errors, strict=True)})
        row["slope"] = error_slope(scales, errors)
        out.append(row)
    return out


def error_rows(errors: Mapping[str, Mapping[int, float]]) -> list[dict]:
    """One row per d (``"d"``), one column per variant of ``errors`` (variant -> d -> max
    |RNN - attention|; every variant has the d of the first)."""
    variants = list(errors)
    return [{"d": d, **{v: errors[v][d] for v in variants}} for d in errors[variants[0]]]


def symbolic_rows(proofs: Sequence) -> list[dict]:
    """One row per ``constructions.symbolic.symbolic_construction`` check: ranks (r_V, r_KQ; None:
    full rank), hidden neurons n, and the monomials left in RNN - attention."""
    return [
        {
            "variant": p.variant,
            "d": p.d,
            "ranks": p.ranks or None,
            "T": p.T,
            "n": p.weights["W_in1"].shape[0],
            "monomials": p.nonzero_terms,
        }
        for p in proofs
    ]


@dataclasses.dataclass(frozen=True)
class Counts:
    """The size of one construction: hidden neurons n, output-gating neurons m, parameters."""

    n: int
    m: int
    params: int


def variant_counts(variant: str, d: int, r: int | None) -> Counts | None:
    """The ``Counts`` of ``variant`` for a teacher of size d and rank r (None: d); None for
    the symmetric variant of a low-rank teacher (W_V singular)."""
    if variant == "symmetric" and r is not None and r < d:
        return None
    c = neuron_count(variant, d, r, r)
    return Counts(c["n"], c["m"], parameter_count(variant, d, r, r))


def side_by_side(teachers: Sequence[tuple[int, int | None]]) -> list[dict]:
    """One row per teacher (d, r; None: full rank): attention's 3 d^2, each ``variant_counts``."""
    return [
        {
            "teacher": (d, r),
            "attention": 3 * d * d,
            **{v: variant_counts(v, d, r) for v in VARIANTS},
        }
        for d, r in teachers
    ]
