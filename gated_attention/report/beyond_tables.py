"""Tables of the chapter "Beyond the paper": compressed output gating and capped memory.

The chapter computes; these print (or return as markdown) what it computed, in fixed columns.

    print_compressed_checks  the d = 4 neuron count, the symbolic checks, the float64 errors
    neuron_bound_table       output-gating neurons per d against the column-rank lower bound
    print_output_counts      the pruned counts of the recorded teacher-identification students
    planted_max_error        the planted case: largest |measured - closed form| error
    print_capped_law         fitted exponents and the error table of the capped construction
    capped_runs              the capped-training students: recorded when shipped, else trained
    print_capped_students    one row per capped student, beside the capped constructions
    print_capped_summary     the seed-median ratios the scorecard rows hold
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..constructions import capped_memory as cm
from ..constructions import compressed_output as co
from ..constructions.gated_rnn import neuron_count
from .beyond_plots import law as error_law

__all__ = [
    "print_compressed_checks",
    "neuron_bound_table",
    "print_output_counts",
    "planted_max_error",
    "print_capped_law",
    "capped_runs",
    "print_capped_students",
    "print_capped_summary",
]


def print_compressed_checks(
    rnn, proofs: Sequence, errors: Mapping[int, float], low: Mapping[int, float]
) -> None:
    """Print the compressed construction's neuron counts (``rnn``, d = 4: n hidden, how many
    with lam = 1 and lam = 0, m output-gating), one line per symbolic check (``proofs``:
    ``symbolic_compressed`` results, monomials left in RNN - attention), and the float64
    relative errors per d at full rank (``errors``: d -> max error) and at rank d // 2 with
    W_K = W_V (``low``), as aligned rows."""
    kv, q = int((rnn.lam == 1).sum()), int((rnn.lam == 0).sum())
    print(
        f"d = 4: n = {rnn.n} hidden ({kv} with lam = 1, {q} with lam = 0), "
        f"m = {rnn.m} output-gating neurons"
    )
    for p in proofs:
        print(f"sympy, d = {p.d}, T = {p.T}: monomials left in RNN - attention: {p.nonzero_terms}")
    print("d                    " + "".join(f"{d:>9d}" for d in errors))
    print("max rel. error        " + "".join(f"{e:9.1e}" for e in errors.values()))
    print("rank d // 2, W_K = W_V" + "".join(f"{e:9.1e}" for e in low.values()))


def neuron_bound_table(ds: Iterable[int]) -> tuple[str, dict[int, int]]:
    """A markdown table, one row per d: hidden n and output-gating m of the compressed
    construction, m of App. A.1 / A.3 (d^2), and the lower bound on m (the column rank of
    Psi(q), ``compressed_output.column_rank``); and the bounds as {d: bound}."""
    table = [
        "| d | hidden n | output m: App. A.1 / A.3 | compressed | lower bound (column rank) |",
        "|---|---|---|---|---|",
    ]
    bound = {}
    for d in ds:
        c = co.compressed_neuron_count(d)
        bound[d] = co.column_rank(co.symmetric_product_matrix(d))
        m_full = neuron_count("symmetric", d)["m"]
        table.append(f"| {d} | {c['n']} | {m_full} | {c['m']} | {bound[d]} |")
    return "\n".join(table), bound


def print_output_counts(counts: Sequence, bound: int) -> list[int]:
    """Print one row per recorded student (``report.output_counts.OutputCount``: run, seed,
    pruned n and m, m after merging, lam ~ 1 and lam ~ 0 groups, normalised loss, learned)
    and a summary of the pruned m of those that learned the construction against ``bound``
    (the lower bound at d = 4). Returns those m, in the order of ``counts``."""
    print(
        f"{'run':<16}{'seed':>5}{'n':>5}{'m':>5}{'merged':>8}"
        f"{'lam~1':>7}{'lam~0':>7}{'loss':>10}  learned"
    )
    for r in counts:
        print(
            f"{r.run:<16}{r.seed:>5}{r.n:>5}{r.m:>5}{r.m_merged:>8}"
            f"{r.lam_one:>7}{r.lam_zero:>7}{r.normalised_loss:>10.1e}  {r.learned}"
        )
    learned_m = [r.m for r in counts if r.learned]
    print(
        f"\nlearned the construction: {len(learned_m)} of {len(counts)}; pruned m: "
        f"min {min(learned_m)}, median {np.median(learned_m):g}, max {max(learned_m)} "
        f"(lower bound {bound}); at the bound: {sum(m == bound for m in learned_m)}"
    )
    return learned_m


def planted_max_error(
    lams: Iterable[float], Ts: Iterable[int], banks: Iterable[int] = (1, 2)
) -> float:
    """The planted case: the largest |measured - closed form| relative error of the capped
    construction on a constant input (``constant_input_error`` against ``planted_error``)
    over every lam_max, T and number of banks given."""
    return max(
        abs(cm.constant_input_error(lam, T, banks=p) - cm.planted_error(lam, T, p))
        for lam in lams
        for T in Ts
        for p in banks
    )


def print_capped_law(
    law: Mapping[int, Sequence],
    slope: Mapping[int, float],
    fit: tuple[float, float],
    planted: float,
) -> None:
    """Print the planted-case error, the fitted exponent per number of banks (``slope``, over
    the points of ``law`` whose x = T (1 - lam_max) lies in ``fit``), and one row per point:
    lam_max, T, x, the measured errors with 1 and 2 banks (``law``: banks -> ``CappedPoint``s,
    the same points in the same order for 1 and 2) and the law e_1(x), e_2(x) beside them."""
    print(f"planted case (constant input): largest |measured - closed form| = {planted:.1e}")
    for p in (1, 2):
        inside = [q for q in law[p] if fit[0] <= q.x <= fit[1]]
        print(
            f"{p} bank(s): fitted exponent {slope[p]:.3f} over {len(inside)} points with "
            f"T (1 - lam_max) in [{fit[0]:g}, {fit[1]:g}]"
        )
    print("\n  lam_max     T   T(1-lam)   error (1 bank)   law e_1   error (2 banks)   law e_2")
    for a, b in zip(law[1], law[2], strict=True):
        print(
            f"{a.lam_max:>9g} {a.T:>5d} {a.x:>10.3g} {a.error:>16.3e} "
            f"{float(error_law(a.x, 1)):>9.3e} {b.error:>17.3e} "
            f"{float(error_law(b.x, 2)):>9.3e}"
        )


def capped_runs(configs: Mapping, profile: str) -> tuple[dict, list, dict, dict]:
    """The capped-training students of ``configs`` ((T, lam_max) -> config, from
    ``experiments.capped_memory.capped_memory_configs``): each read from its recorded run
    ``<name>-<profile>`` when one with the same config ships, else trained here. Prints one
    line per configuration (steps, size, seeds, where it came from).

    Returns (runs, rows, construction, two_banks): the runs by key; the ``CappedStudent`` rows
    of all of them; and, by key, the capped construction's loss per seed with one bank and
    with two."""
    from .. import experiments
    from ..experiments import capped_memory as cx

    runs, rows, construction, two_banks = {}, [], {}, {}
    for key, cfg in configs.items():
        name = f"{cfg.name}-{profile}"
        rec = experiments.recorded(name) if name in experiments.recorded_names() else None
        if rec is not None and rec.config == cfg:
            runs[key] = rec
            wall = rec.metrics["train_wall_time_s"]
            where = f"recorded run {name}, {wall:.0f} s of training"
        else:
            runs[key] = experiments.run(cfg, progress=False)
            where = f"trained here: {runs[key].metrics['train_wall_time_s']:.0f} s"
        rows += cx.capped_students(cfg, runs[key])
        construction[key] = cx.capped_construction_loss(cfg)
        two_banks[key] = cx.capped_construction_loss(cfg, banks=2)
        print(
            f"T = {key[0]:>2}, lam <= {key[1]:<4g}: {cfg.train.steps:,} steps, "
            f"n = m = {cfg.n}, seeds {list(cfg.seeds)} ({where})"
        )
    return runs, rows, construction, two_banks


def print_capped_students(
    rows: Sequence, configs: Mapping, construction: Mapping, two_banks: Mapping
) -> None:
    """Print one row per capped student (``CappedStudent``): T, cap, seed, normalised loss,
    the capped construction's loss on the same teacher with one bank and two (``construction``
    and ``two_banks``: (T, lam_max) -> one loss per seed of ``configs[(T, lam_max)]``), the
    pruned n and m, the neurons at the cap and near 0, and the largest lam."""
    print(
        f"{'T':>3} {'cap':>5} {'seed':>5} {'loss':>9} {'constr.':>9} {'2 banks':>9} "
        f"{'n':>4} {'m':>4} {'at cap':>7} {'lam~0':>6} {'top lam':>8}"
    )
    for r in rows:
        key = (r.T, r.lam_max)
        e = list(configs[key].seeds).index(r.seed)
        c, c2 = construction[key][e], two_banks[key][e]
        print(
            f"{r.T:>3} {r.lam_max:>5g} {r.seed:>5} {r.normalised_loss:>9.2e} {c:>9.2e} "
            f"{c2:>9.2e} {r.n:>4} {r.m:>4} {r.at_cap:>7} {r.near_zero:>6} {r.lam_top:>8.4f}"
        )


def print_capped_summary(
    growth: float, ratio_099: float, vs_construction: float, at_cap: float
) -> None:
    """Print the seed medians the scorecard rows of capped training hold: the loss growth
    from T = 8 to 32 at cap 0.9, the cap-0.99 / uncapped loss ratio at T = 32, trained /
    capped construction at (32, 0.9), and the neurons at the cap 0.99 (T = 32)."""
    print(
        f"\nseed medians: loss(T=32, 0.9) / loss(T=8, 0.9) = {growth:.3g}; "
        f"loss(T=32, 0.99) / loss(T=32, no cap) = {ratio_099:.3g}"
    )
    print(
        f"trained / capped construction (T=32, 0.9) = {vs_construction:.3g}; neurons at "
        f"the cap 0.99 (1 - lam <= 0.02), T = 32: {at_cap:g}"
    )
