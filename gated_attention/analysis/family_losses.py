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

__all__ = [
    "Curve",
    "SetupRow",
    "curves",
    "fig4b_rows",
    "unstable",
    "late_fall",
    "loss_at",
    "ratio",
    "setup_rows",
    "worst_seed_at",
]


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


def fig4b_rows(config, tensors: dict, gd_ood: float) -> tuple[dict[str, float], str]:
    """Fig. 4B's scorecard rows (id -> value) at the largest size, out of distribution
    (``ood_loss``), and the best family other than the GRU (the ``fig4b.gru_best`` row's
    comparison): the GRU's and the LSTM's loss over one GD step's ``gd_ood`` (seed mean and
    worst seed), the GRU over the best other family, and the LRU orderings."""
    key = "ood_loss"
    others = [f for f in config.families if f != "gru"]
    best_other = min(others, key=lambda f: loss_at(config, tensors, f, key))
    rows = {
        "fig4b.gru_below_gd": loss_at(config, tensors, "gru", key) / gd_ood,
        "fig4b.gru_below_gd_significant": worst_seed_at(config, tensors, "gru", key) / gd_ood,
        "fig4b.lstm_below_gd": loss_at(config, tensors, "lstm", key) / gd_ood,
        "fig4b.lstm_below_gd_significant": worst_seed_at(config, tensors, "lstm", key) / gd_ood,
        "fig4b.gru_best": ratio(config, tensors, "gru", best_other, key),
        "fig4b.lru_inout_below_lru": ratio(config, tensors, "lru_inout", "lru", key),
        "fig4b.lru_below_mlp": ratio(config, tensors, "lru", "lru_inout_mlp", key),
    }
    return rows, best_other


def unstable(
    config, tensors: dict, key: str = "eval_loss", limit: float | None = 1.0
) -> list[tuple[str, int, int, int]]:
    """(family, target, bad seeds, seeds) of every group with a seed whose final loss is
    non-finite or above ``limit`` (1 for a normalised loss: worse than predicting zero; None:
    non-finite only): a diverged or unstable run at its rate, in groups order."""
    out = []
    for k, (fam, target, _) in enumerate(config.groups()):
        v = tensors[key][k]
        bad = ~torch.isfinite(v)
        if limit is not None:
            bad |= v.nan_to_num(nan=0.0) > limit
        if bad.any():
            out.append((fam, target, int(bad.sum()), v.numel()))
    return out


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


@dataclasses.dataclass(frozen=True)
class SetupRow:
    """One family of the Fig. 4B setup check (``experiments.families_in_context``): its size,
    rate (``at_grid_edge``: the lowest or highest of the grid), per-seed held-out losses over
    one optimal GD step's exact loss, in distribution (``in_dist``, E,) and out of it
    (``ood``, E,), and the late fall of its training loss."""

    family: str
    width: int
    count: int
    lr: float
    at_grid_edge: bool
    in_dist: tuple[float, ...]
    ood: tuple[float, ...]
    fall: float

    @property
    def in_dist_mean(self) -> float:
        """Seed-mean in-distribution loss over GD's (inf if a seed diverged)."""
        return sum(self.in_dist) / len(self.in_dist)

    @property
    def ood_mean(self) -> float:
        """Seed-mean OOD loss over GD's OOD loss (inf if a seed diverged)."""
        return sum(self.ood) / len(self.ood)


def setup_rows(config, tensors: dict, gd_loss: float, gd_ood_loss: float) -> list[SetupRow]:
    """A ``SetupRow`` per family of a setup check (config: ``SetupCheckConfig``; tensors: its
    results), each loss divided by the exact loss of one optimal GD step on its set: ``gd_loss``
    (7/74 in distribution) and ``gd_ood_loss`` (14/74 with the W variance doubled)."""
    if not (gd_loss > 0 and gd_ood_loss > 0):
        raise ValueError(f"the GD losses must be positive, got {gd_loss!r}, {gd_ood_loss!r}")
    F = len(config.families)
    if tensors["eval_loss"].shape[0] != F or tensors["eval_loss"].shape[1] != len(config.seeds):
        raise ValueError(
            f"eval_loss has shape {tuple(tensors['eval_loss'].shape)}; this config needs "
            f"(families, seeds) = ({F}, {len(config.seeds)})"
        )
    rates = tensors["lrs"].tolist()
    lrs = tuple((f, float(lr)) for f, lr in zip(config.families, rates, strict=True))
    main = config.main(lrs)
    edges = (min(config.lr_grid), max(config.lr_grid))
    rows = []
    for k, (fam, lr) in enumerate(lrs):
        loss = tensors["eval_loss"][k].nan_to_num(nan=float("inf"))
        ood = tensors["ood_loss"][k].nan_to_num(nan=float("inf"))
        rows.append(
            SetupRow(
                family=fam,
                width=int(tensors["widths"][k]),
                count=int(tensors["counts"][k]),
                lr=lr,
                at_grid_edge=lr in edges,
                in_dist=tuple(float(v) / gd_loss for v in loss),
                ood=tuple(float(v) / gd_ood_loss for v in ood),
                fall=late_fall(main, tensors, fam),
            )
        )
    return rows
