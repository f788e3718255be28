"""The printed tables of the construction chapters: "Compressions" (App. A) and "Which RNNs can
be attention" (App. B). No training: each function prints or returns what it is handed.

    print_symbolic_checks   one line per exact sympy check of a compressed construction
    print_float64_errors    the float64 error of a construction per d, as two aligned rows
    count_cell              one cell of the side-by-side table: n / m / parameters
    weight_summary          nonzero weights and the largest finite |weight| of a construction
    print_eps_errors        a linearised construction's relative error against eps, with the
                            log-log slope
    print_no_training       the profile, and what a construction chapter checks instead of training
    side_by_side_table      n / m / parameters of each variant for a few teachers (markdown)
    error_table             max |RNN - attention| per d and variant (markdown)
    count_table             neurons and parameters per d of every variant (markdown)

Glossary (code name -> symbol):
    n, m     hidden neurons, output-gating neurons of the gated RNN
    r        the teacher's rank (r_V = r_KQ = r; None: full rank d)
    eps      the input scale epsilon of a linearised construction (App. B)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from ..constructions.gated_rnn import neuron_count, parameter_count
from ..constructions.linearised import error_slope

__all__ = [
    "print_symbolic_checks",
    "print_float64_errors",
    "count_cell",
    "weight_summary",
    "print_eps_errors",
    "print_no_training",
    "side_by_side_table",
    "error_table",
    "count_table",
]


def print_symbolic_checks(proofs: Sequence) -> None:
    """One line per symbolic check (``constructions.symbolic.symbolic_construction``):
    variant, sizes, and the monomials left in RNN - attention."""
    for p in proofs:
        ranks = f" r_V={p.ranks[0]} r_KQ={p.ranks[1]}" if p.ranks else ""
        print(
            f"{p.variant} d={p.d}{ranks} T={p.T}: n = "
            f"{p.weights['W_in1'].shape[0]}, monomials left in RNN - "
            f"attention: {p.nonzero_terms}"
        )


def print_float64_errors(errors: Mapping[int, float]) -> None:
    """The float64 errors per d (``constructions.symbolic.numeric_errors``: d -> max error)
    as two aligned rows."""
    print("d          " + "".join(f"{d:>9d}" for d in errors))
    print("max error  " + "".join(f"{e:9.1e}" for e in errors.values()))


def count_cell(variant: str, d: int, r: int | None) -> str:
    """'n / m / parameters' of ``variant`` for a teacher of size d and rank r (None: d);
    'n/a (W_V singular)' for the symmetric variant of a low-rank teacher."""
    if variant == "symmetric" and r is not None and r < d:
        return "n/a (W_V singular)"
    c = neuron_count(variant, d, r, r)
    return f"{c['n']} / {c['m']} / {parameter_count(variant, d, r, r)}"


def weight_summary(params: Mapping) -> tuple[int, float]:
    """(nonzero weights, largest finite |weight|) of a construction's parameters: tensors of
    any shape, nested in dicts and lists."""
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


def print_eps_errors(rows: Mapping[str, Sequence[float]], eps: Sequence[float]) -> None:
    """Relative errors against eps as aligned rows, with the log-log slope (``rows``: name ->
    one error per entry of ``eps``)."""
    print(f"{'eps':<22}" + "".join(f"{e:>9.0e}" for e in eps) + "    slope")
    for name, errors in rows.items():
        slope = error_slope(eps, errors)
        print(f"{name:<22}" + "".join(f"{e:9.1e}" for e in errors) + f"{slope:9.2f}")


def print_no_training(profile: str, sympy: str) -> None:
    """Print the profile and what a construction chapter checks instead of training: exact
    sympy checks (``sympy`` says which d and T) and float64 checks for d = 1..8."""
    print(f"profile: {profile}")
    print("no training here: every profile computes the same thing, in seconds:")
    print(f"exact sympy checks ({sympy}), and float64 checks for d = 1..8 (3 seeds, T = 32)")


def side_by_side_table(
    teachers: Sequence[tuple[int, int | None]],
    variants: Sequence[str] = ("full", "symmetric", "low_rank", "side"),
) -> str:
    """A markdown table with a one-line legend: one row per teacher (d, rank r; None: full
    rank), its attention parameters (3 d^2), and ``count_cell`` for each of ``variants``."""
    rows = []
    for d, r in teachers:
        cells = " | ".join(count_cell(v, d, r) for v in variants)
        rows.append(f"| {d}{'' if r is None else f', rank {r}'} | {3 * d * d} | {cells} |")
    return (
        "hidden neurons n / output-gating neurons m / parameters; the low-rank column uses the "
        "teacher's rank (= d when none is given); the symmetric one needs an invertible W_V"
        "\n\n| d | attention params | full | symmetric | low rank | side |\n"
        "|---|---|---|---|---|---|\n" + "\n".join(rows)
    )


def error_table(errors: Mapping[str, Mapping[int, float]]) -> str:
    """A markdown table with a one-line legend: one row per d, one column per variant
    (``errors``: variant -> d -> max |RNN - attention| over the seeds; every variant has the
    d of the first)."""
    variants = list(errors)
    ds = list(errors[variants[0]])
    head = "| d | " + " | ".join(variants) + " |\n|---|" + "---|" * len(variants)
    rows = [f"| {d} | " + " | ".join(f"{errors[v][d]:.1e}" for v in variants) + " |" for d in ds]
    return (
        "max over 3 seeds of max |RNN - attention| (float64):\n\n" + head + "\n" + "\n".join(rows)
    )


def count_table(counts: Sequence[Mapping[str, int]]) -> str:
    """A markdown table, one row per d, of ``plotting.construction_counts`` (one dict per d):
    attention's parameters, n, m and parameters of the full construction, n of the symmetric
    and low-rank ones, n and parameters of side gating."""
    head = (
        "| d | attention params | full n | full m | full params | symmetric n | "
        "low rank n | side n | side params |\n|---|" + "---|" * 8
    )
    keys = ("d", "attention_params", "full_n", "full_m", "full_params", "symmetric_n")
    keys += ("low_rank_n", "side_n", "side_params")
    rows = ["| " + " | ".join(str(c[k]) for k in keys) + " |" for c in counts]
    return head + "\n" + "\n".join(rows)
