"""Reading a run of ``experiments.architectures``: the loss of each family at each parameter
count (mean and spread over seeds) and the ratios the scorecard rows of Fig. 4A/B state.

Glossary:
    key       "eval_loss" (Fig. 4A: normalised held-out loss) or "ood_loss" (Fig. 4B)
    curve     per family: parameter counts (K,), seed mean (K,), min and max over seeds (K,)
    ratio     seed-mean loss of one family over another's at the largest parameter target
    worst     the largest per-seed loss at the largest target (a diverged seed: +inf)
"""

from __future__ import annotations

import dataclasses

import torch

__all__ = ["Curve", "curves", "late_fall", "loss_at", "ratio", "worst_seed_at"]


@dataclasses.dataclass(frozen=True)
class Curve:
    """One family's final loss against its parameter count (targets ascending)."""

    family: str
    counts: tuple[int, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]


def _rows(config, tensors: dict, fam: str, key: str) -> list[tuple[int, torch.Tensor, int]]:
    out = []
    for k, (f, target, _lr) in enumerate(config.groups()):
        if f == fam:
            out.append((target, tensors[key][k], int(tensors["counts"][k])))
    if not out:
        raise ValueError(f"family {fam!r} is not in this run ({', '.join(config.families)})")
    return sorted(out, key=lambda r: r[0])


def curves(config, tensors: dict, key: str = "eval_loss") -> list[Curve]:
    """A ``Curve`` per family of the run (a diverged seed counts as +inf in low/high, and
    makes the mean +inf: it is not hidden)."""
    out = []
    for fam in config.families:
        rows = _rows(config, tensors, fam, key)
        vals = [r[1].nan_to_num(nan=float("inf")) for r in rows]
        out.append(
            Curve(
                family=fam,
                counts=tuple(r[2] for r in rows),
                mean=tuple(float(v.mean()) for v in vals),
                low=tuple(float(v.min()) for v in vals),
                high=tuple(float(v.max()) for v in vals),
            )
        )
    return out


def loss_at(config, tensors: dict, fam: str, key: str = "eval_loss") -> float:
    """Seed-mean loss of ``fam`` at the largest parameter target of the run."""
    target, vals, _ = _rows(config, tensors, fam, key)[-1]
    return float(vals.nan_to_num(nan=float("inf")).mean())


def worst_seed_at(config, tensors: dict, fam: str, key: str = "eval_loss") -> float:
    """The largest per-seed loss of ``fam`` at the largest parameter target of the run: below a
    bound only when every seed is (the seed band lies below it)."""
    target, vals, _ = _rows(config, tensors, fam, key)[-1]
    return float(vals.nan_to_num(nan=float("inf")).max())


def ratio(config, tensors: dict, a: str, b: str, key: str = "eval_loss") -> float:
    """loss_at(a) / loss_at(b): below 1 means family ``a`` reaches the lower loss."""
    return loss_at(config, tensors, a, key) / loss_at(config, tensors, b, key)


def late_fall(config, tensors: dict, fam: str, fraction: float = 0.2) -> float:
    """How much the training loss of ``fam`` (largest target, seed mean) still fell over the last
    ``fraction`` of training: 1 - (mean loss of the last windows) / (mean loss of the windows just
    before them). Near 0: converged at this budget; large: still learning when it stopped."""
    k = [i for i, g in enumerate(config.groups()) if g[0] == fam and g[1] == max(config.targets)]
    if not k:
        raise ValueError(f"family {fam!r} is not in this run ({', '.join(config.families)})")
    curve = tensors["train_curves"][k[0]].mean(-1)  # (K,)
    w = max(1, int(round(fraction * curve.numel())))
    if curve.numel() < 2 * w:
        raise ValueError(f"a curve of {curve.numel()} windows is too short for fraction {fraction}")
    return float(1.0 - curve[-w:].mean() / curve[-2 * w : -w].mean())
