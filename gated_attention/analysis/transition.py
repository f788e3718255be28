"""Where the loss falls: the transition point of Fig. 3A/B, with a bootstrap over seeds.

The paper reads off Fig. 3 that the loss drops to ~0 only from about twice the construction's
neuron count. We make "drops" a number:

    normalised loss   l(n, seed) = final MSE / Var(teacher output)   (1 = predicting 0)
    transition        n* = the smallest n of the sweep such that the seed-mean of log10 l is below
                      log10(threshold) at n AND at every larger n of the sweep (so a single lucky
                      small network does not count); None if no such n exists.
    uncertainty       a bootstrap over seeds: resample the seeds of every size with replacement,
                      recompute n*, report the 16th / 84th percentiles (a 68% interval) and the
                      fraction of resamples with no transition.

The geometric mean (mean of log10) is used because losses span orders of magnitude.

Glossary (code name -> paper symbol -> section):
    sizes        n = m of each swept network                       Sec. 4.2, Fig. 3A/B
    transition   "the loss falls from about 2 x the construction"  Sec. 4.2
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from ..experiments.profiles import derive_seed
from ..experiments.teacher_student import TeacherStudentConfig

__all__ = ["Transition", "transition_point", "normalised_losses"]


@dataclasses.dataclass(frozen=True)
class Transition:
    """The estimate n*, its bootstrap interval (lo, hi) and the resamples without a transition."""

    estimate: int | None
    lo: float | None
    hi: float | None
    no_transition_fraction: float
    threshold: float
    n_boot: int


def _first_below(sizes: np.ndarray, log_mean: np.ndarray, log_thr: float) -> int | None:
    below = log_mean < log_thr
    ok = np.flip(np.cumprod(np.flip(below)))  # ok[i]: below at i and at every larger size
    idx = np.flatnonzero(ok)
    return int(sizes[idx[0]]) if idx.size else None


def transition_point(
    sizes, losses, *, threshold: float = 1e-2, n_boot: int = 1000, seed: int = 0
) -> Transition:
    """n* and its bootstrap interval from normalised losses (S sizes, R seeds), see module doc.

    ``sizes`` (S,) increasing; ``losses`` (S, R) positive normalised losses.
    """
    sizes = np.asarray(sizes)
    L = np.asarray(losses, dtype=np.float64)
    if L.ndim != 2 or L.shape[0] != sizes.shape[0]:
        raise ValueError(f"losses must have shape (S={sizes.shape[0]}, seeds), got {L.shape}")
    if np.any(np.diff(sizes) <= 0):
        raise ValueError(f"sizes must increase strictly, got {sizes.tolist()}")
    if np.any(~np.isfinite(L)) or np.any(L <= 0):
        raise ValueError("losses must be positive and finite")
    if not 0 < threshold:
        raise ValueError(f"threshold must be positive, got {threshold}")
    logL, log_thr = np.log10(L), np.log10(threshold)
    est = _first_below(sizes, logL.mean(axis=1), log_thr)
    rng = np.random.default_rng(seed)
    R = L.shape[1]
    boots = []
    for _ in range(n_boot):
        pick = rng.integers(0, R, size=L.shape)  # resample seeds, independently per size
        boots.append(_first_below(sizes, np.take_along_axis(logL, pick, 1).mean(1), log_thr))
    found = np.array([b for b in boots if b is not None], dtype=np.float64)
    none_frac = 1 - found.size / n_boot
    lo, hi = np.percentile(found, [16, 84]).tolist() if found.size else (None, None)
    return Transition(est, lo, hi, float(none_frac), float(threshold), n_boot)


def normalised_losses(config: TeacherStudentConfig, eval_loss: torch.Tensor):
    """(sizes (S,), losses (S, R)): held-out MSE / Var(teacher output) of each size and seed.

    ``eval_loss`` (E,) is the results entry's held-out MSE, members ordered as
    ``config.members()`` (sizes outer, seeds inner). The variance is taken over the same held-out
    sequences (``derive_seed(seed, "eval")``), all steps and outputs.
    """
    sizes = np.array(config.sizes if config.sizes else (config.n,))
    R = len(config.seeds)
    eval_loss = torch.as_tensor(eval_loss, dtype=torch.float64)
    if eval_loss.shape != (sizes.size * R,):
        raise ValueError(
            f"eval_loss must have shape ({sizes.size * R},), got {tuple(eval_loss.shape)}"
        )
    var = []
    for seed in config.seeds:
        g = torch.Generator().manual_seed(derive_seed(seed, "eval"))
        _, y = config.task(seed).sample(config.eval_batch, g)
        var.append(float(y.var()))
    return sizes, (eval_loss.reshape(sizes.size, R) / torch.tensor(var)).numpy()
