"""The printed tables of the chapter "RNNs learn gradient descent" (Sec. 5.2, Table 2): what
``gd_learned.analyse_regression`` computed, for the profile's own run and for recorded runs.

    print_setup           the profile's sizes, seeds, training and evaluation, against the paper's
    print_gd_gap          each network's paired gap to one GD step, the seed mean's, and the GD
                          loss by Monte Carlo
    print_table2          the planted check, Table 2 (GD-term coefficients against eta*) and the
                          largest relative error of the three
    print_memory          the memory neurons per network and the coefficient spread over t
    print_recorded_run    one recorded run: gaps, Table 2 coefficients, memory neurons
    print_transition      the per-seed reading of Fig. 3C: seeds at GD per size, and n*
    quadratic_minimiser   where a loss sampled on a grid of learning rates, a quadratic in
                          eta, is smallest (the Monte Carlo eta* of App. D.2)
    NO_PAPER_RUN          what the paper-profile cell prints when no such run is recorded

Glossary (code name -> paper symbol -> section):
    eta_star     eta* = 5/74, the optimal GD step size        Sec. 5.1 / App. D.2
    gd_mean      the GD step's mean loss on the evaluation set
    top          the networks of Table 2 (every seed of the largest size n_top)
"""

from __future__ import annotations

import numpy as np

from .gd_learned import PAPER_GAP, RegressionAnalysis

__all__ = [
    "print_setup",
    "print_gd_gap",
    "print_table2",
    "print_memory",
    "print_recorded_run",
    "print_transition",
    "quadratic_minimiser",
    "NO_PAPER_RUN",
]

NO_PAPER_RUN = (
    "No paper-profile run is recorded in this package yet: this cell would list each recorded "
    "run's provenance, losses, Table 2 coefficients and gaps, and score them; record one with "
    "`python -m gated_attention.tools.record in-context-regression --profile paper --name "
    "in-context-regression-paper-<machine>`."
)


def print_setup(profile: str, config) -> None:
    """Print the sizes, seeds, training and evaluation of ``config``
    (``experiments.regression_config(profile)``), the paper's Table 2 budget, and, below the
    paper profile, what the profile changes."""
    tc = config.train
    print(f"profile: {profile}")
    print(f"sizes n = m: {config.sizes}; seeds: {config.seeds}")
    print(
        f"training: {tc.steps:,} steps, batch {tc.batch_size}, AdamW lr {tc.lr:g} (cosine to "
        f"{tc.eta_min:g}, warm-up {tc.warmup_steps}), weight decay {tc.weight_decay:g}"
    )
    print(
        f"evaluation: {config.eval_batch:,} held-out sequences, the same for every network and GD"
    )
    print("paper: n = 80, 300,000 steps of batch 64, 4 seeds (Table 2)")
    if profile != "paper":
        print(
            f"{profile} changes: {tc.steps:,} steps instead of 300,000, batch {tc.batch_size}, "
            "a larger learning rate, and fewer sizes for Fig. 3C"
        )


def _seed_gaps(a: RegressionAnalysis, indent: str, n_top: bool) -> list[str]:
    lines = []
    for seed, loss, g, se in zip(
        a.top_seeds, a.top_rnn_mean, a.top_gap, a.top_gap_se, strict=False
    ):
        size = f"n = {a.n_top}, " if n_top else ""
        sep = ", " if n_top else "   "
        pad = " " if n_top else "  "
        lines.append(
            f"{indent}{size}seed {seed}: RNN {loss:.5f}{sep}RNN - GD = {g:+.5f} +- {se:.5f}"
            f"{pad}({100 * g / a.gd_mean:+.2f}% of GD)"
        )
    return lines


def print_gd_gap(a: RegressionAnalysis, gd_mc: float, gd_mc_se: float, n_mc: int) -> None:
    """Print each Table 2 network's mean loss and paired gap to one GD step (with its standard
    error, and as a share of the GD loss); the seed mean's loss and paired gap; the RNN loss as
    7/74 + gap against the paper's 0.0945; and the GD loss by Monte Carlo on ``n_mc`` sequences
    (``gd_mc`` +- ``gd_mc_se``) against 7/74 and the paper's 0.0947."""
    from ..tasks.regression import GD_MIN_LOSS

    for line in _seed_gaps(a, "", n_top=False):
        print(line)
    print(
        f"\nmean over {len(a.top)} seeds on these sequences: RNN {a.raw_mean:.5f}, "
        f"GD {a.gd_mean:.5f}"
    )
    print(
        f"paired gap RNN - GD = {a.gap:+.5f} +- {a.gap_se:.5f}, i.e. "
        f"{100 * a.gap / a.gd_mean:+.2f}% +- {100 * a.gap_se / a.gd_mean:.2f}% of the GD loss"
    )
    side = "above" if a.gap > 0 else "below" if a.gap < 0 else "at"
    print(
        f"the RNN lies {side} GD here; the paper's RNN lies below: 0.0945 against 0.0947, "
        f"{100 * PAPER_GAP:+.2f}% of GD"
    )
    print(f"RNN loss = 7/74 + gap = {a.rnn_loss:.5f} +- {a.gap_se:.5f}   (paper: 0.0945)")
    print(
        f"GD loss, Monte Carlo on {n_mc:,} sequences: {gd_mc:.5f} +- {gd_mc_se:.5f}   "
        f"(exact 7/74 = {GD_MIN_LOSS:.5f}; paper: 0.0947)"
    )


def print_table2(a: RegressionAnalysis, check, eta_star: float) -> None:
    """Print the planted check (``check``: ``gd_theory.gd_terms`` of the 12-neuron GD network:
    its coefficients' mean and residual ratio), then Table 2: per coordinate i the GD
    coefficient eta*, the RNNs' (mean +- std over seeds of the mean over t) and their spread
    over t; the residual ratio's mean +- std; and the largest |coefficient - eta*| / eta*."""
    print(
        "planted check, the 12-neuron GD network: coefficients "
        f"{check.coefs.mean():.6f} (eta* = {eta_star:.6f}), residual ratio "
        f"{check.residual_ratio:.1e}"
    )
    per_seed, ratios, several = a.per_seed_coefs, a.residual_ratios, len(a.top) > 1
    print(
        f"\n{'term':<24}{'GD (eta*)':>12}{'RNN, mean +- std over seeds':>32}{'spread over t':>16}"
    )
    for i in range(3):
        term = f"x_t[{i + 1}] y_t[1] x_q[{i + 1}]"
        m, s = per_seed[:, i].mean(), per_seed[:, i].std(ddof=1) if several else 0.0
        spread = a.coefs[:, :, i].std(axis=1).mean()
        print(f"{term:<24}{eta_star:>12.5f}{m:>22.5f} +- {s:.5f}{spread:>16.5f}")
    print(
        f"{'residual norm / GD norm':<24}{0:>12}{ratios.mean():>22.4f} +- "
        f"{ratios.std(ddof=1) if several else 0.0:.4f}"
    )
    print(f"\nlargest |coefficient - eta*| / eta* of the three: {100 * a.coef_rel_error:.2f}%")


def print_memory(a: RegressionAnalysis, eta_star: float) -> None:
    """Print the memory neurons (lam > 0.9) per Table 2 network with their median lam, and the
    range of the GD coefficients over t in units of eta*."""
    print(
        f"per network: {len(a.memory_lam) / len(a.top):.1f} neurons with lam > 0.9 (the GD "
        f"step needs 9 memory neurons), median lam among them {np.median(a.memory_lam):.4f}"
    )
    print(
        f"coefficient spread over t: {a.coefs.min() / eta_star:.2f} to "
        f"{a.coefs.max() / eta_star:.2f} eta*"
    )


def print_recorded_run(b: RegressionAnalysis, eta_star: float) -> None:
    """Print, indented under a recorded run's provenance line, each Table 2 network's gap to
    GD, the Table 2 coefficients (mean over seeds and t) with their spread over t, and the
    memory neurons per network with their median lam."""
    for line in _seed_gaps(b, "  ", n_top=True):
        print(line)
    print(
        "  Table 2 coefficients (mean over seeds and t): "
        + ", ".join(f"{c:.5f}" for c in b.per_seed_coefs.mean(axis=0))
        + f" (eta* = {eta_star:.5f}); spread over t {b.coefs.min() / eta_star:.3f} to "
        f"{b.coefs.max() / eta_star:.3f} eta*"
    )
    print(
        f"  memory neurons per network: {len(b.memory_lam) / len(b.top):.1f}, median lam "
        f"{np.median(b.memory_lam):.5f}"
    )


def print_transition(f) -> None:
    """The per-seed reading of Fig. 3C (``f``: ``RegressionAnalysis.transition_learned``):
    seeds within the threshold per size, of R, and the estimated transition n*."""
    print(
        "ours, per seed (gap within 2% of the GD loss): seeds per size "
        + ", ".join(f"{n}: {k}/{f.R}" for n, k in zip(f.sizes, f.k, strict=False))
        + f"; n* = {f.estimate}"
    )


def quadratic_minimiser(etas, losses) -> float:
    """The learning rate at which ``losses`` (one per rate of ``etas``, at least three) are
    smallest, read off the parabola through them: one GD step's loss on a fixed set of
    sequences is exactly a quadratic in eta, so a Monte Carlo estimate over shared sequences
    is one too, and its minimiser estimates eta* independently of the derivation."""
    x, y = np.asarray(etas, dtype=np.float64), np.asarray(losses, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 3:
        raise ValueError(f"need matching 1-d etas and losses, three or more; got {x.shape}")
    a2, a1, _ = np.polyfit(x, y, 2)
    if not a2 > 0:
        raise ValueError("the losses do not curve upwards: no minimum")
    return float(-a1 / (2 * a2))
