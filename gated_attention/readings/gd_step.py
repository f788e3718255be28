"""One GD step checked by Monte Carlo (App. D.2): the Monte Carlo loss against the exact one,
and the learning rate where the Monte Carlo loss is smallest."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch


@dataclasses.dataclass(frozen=True)
class MonteCarloCheck:
    """At eta* (the last rate): Monte Carlo ``mean`` +- ``se`` against ``exact``, ``z`` in SEs;
    ``worst``: the largest |z| over all ``rates`` learning rates."""

    mean: float
    se: float
    exact: float
    z: float
    worst: float
    rates: int


def monte_carlo_check(
    mc_mean: torch.Tensor, mc_se: torch.Tensor, exact: torch.Tensor
) -> MonteCarloCheck:
    """The ``MonteCarloCheck`` of one GD step (one entry per learning rate, eta* the last)."""
    z_score = float((mc_mean[-1] - exact[-1]) / mc_se[-1])
    worst = ((mc_mean - exact) / mc_se).abs().max()
    return MonteCarloCheck(
        float(mc_mean[-1]), float(mc_se[-1]), float(exact[-1]), z_score, float(worst), len(mc_mean)
    )


def quadratic_minimiser(etas, losses) -> float:
    """The minimiser of the parabola fitted to ``losses`` over ``etas`` (three or more): one GD
    step's loss on shared sequences is exactly quadratic in eta, so this estimates eta*
    independently of the derivation. ValueError: mismatched or too few points, no minimum."""
    x, y = np.asarray(etas, dtype=np.float64), np.asarray(losses, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 3:
        raise ValueError(f"need matching 1-d etas and losses, three or more; got {x.shape}")
    a2, a1, _ = np.polyfit(x, y, 2)
    if not a2 > 0:
        raise ValueError("the losses do not curve upwards: no minimum")
    return float(-a1 / (2 * a2))
