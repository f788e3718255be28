"""The rows of the chapter "RNNs learn gradient descent" (Sec. 5.2, Table 2): what
``gd_learned.analyse_regression`` computed, per network, per coefficient and per size (the
glossary: ``gd_learned``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .gd_learned import RegressionAnalysis


@dataclasses.dataclass(frozen=True)
class SeedGap:
    """One Table 2 network: its mean loss and paired gap RNN - GD (``gap_pct``: of the GD loss)."""

    n: int
    seed: int
    rnn: float
    gap: float
    gap_se: float
    gap_pct: float


def seed_gaps(a: RegressionAnalysis) -> list[SeedGap]:
    """Each Table 2 network's loss and paired gap to one GD step."""
    return [
        SeedGap(a.n_top, int(seed), float(loss), float(g), float(se), float(100 * g / a.gd_mean))
        for seed, loss, g, se in zip(
            a.top_seeds, a.top_rnn_mean, a.top_gap, a.top_gap_se, strict=False
        )
    ]


@dataclasses.dataclass(frozen=True)
class Table2Row:
    """Coordinate ``i`` (1-based) of Table 2: eta*, the RNNs' mean and std over seeds of the mean
    over t (std 0 for one seed), and ``spread``: the std over t, averaged over seeds."""

    i: int
    gd: float
    mean: float
    std: float
    spread: float


def table2_rows(a: RegressionAnalysis, eta_star: float) -> list[Table2Row]:
    """Table 2's three rows, x_t[i] y_t[1] x_q[i] for i = 1, 2, 3."""
    per_seed, several = a.per_seed_coefs, len(a.top) > 1
    out = []
    for i in range(3):
        m, s = per_seed[:, i].mean(), per_seed[:, i].std(ddof=1) if several else 0.0
        spread = a.coefs[:, :, i].std(axis=1).mean()
        out.append(Table2Row(i + 1, eta_star, float(m), float(s), float(spread)))
    return out


@dataclasses.dataclass(frozen=True)
class Residual:
    """Table 2's residual ratio (other terms' norm / GD terms') over networks (std 0 for one)."""

    mean: float
    std: float


def residual(a: RegressionAnalysis) -> Residual:
    ratios = a.residual_ratios
    return Residual(float(ratios.mean()), float(ratios.std(ddof=1)) if len(a.top) > 1 else 0.0)


@dataclasses.dataclass(frozen=True)
class Memory:
    """The memory neurons (lam > 0.9) of Table 2's networks: how many per network, their
    median lam; and the range of the GD coefficients over t and i in units of eta*."""

    per_network: float
    median_lam: float
    lo: float
    hi: float


def memory(a: RegressionAnalysis, eta_star: float) -> Memory:
    return Memory(
        len(a.memory_lam) / len(a.top),
        float(np.median(a.memory_lam)),
        float(a.coefs.min() / eta_star),
        float(a.coefs.max() / eta_star),
    )


@dataclasses.dataclass(frozen=True)
class TransitionRow:
    """One size of Fig. 3C's per-seed reading: ``k`` of ``R`` seeds within the threshold."""

    n: int
    k: int
    R: int


def transition_rows(f) -> list[TransitionRow]:
    """The rows of ``f`` (``RegressionAnalysis.transition_learned``); its n* is ``f.estimate``."""
    return [TransitionRow(int(n), int(k), f.R) for n, k in zip(f.sizes, f.k, strict=False)]
