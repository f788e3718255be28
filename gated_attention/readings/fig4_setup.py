"""The Fig. 4B setup check (ours: does each family learn in-context regression before it is read
out of distribution?), its pilots and its larger-LRU variant, every loss over one GD step's.

Glossary (code name -> meaning):
    gd_in    7/74, the exact in-distribution loss of one optimal GD step (App. D.2)
    gd_ood   14/74, the same step's exact loss with the variance of W doubled"""

from __future__ import annotations

import dataclasses

import torch

from ..analysis.family_losses import setup_rows
from ..models.family_registry import family
from .fig4_families import Scored

#: the recorded runs of the setup check, its pilots and its variant with larger LRU maps
SETUP_RUN = "fig4b-setup-quick"
PILOTS_RUN = "fig4b-setup-pilots-quick"
LRU_INIT_RUN = "fig4b-setup-lru-init-quick"


@dataclasses.dataclass(frozen=True)
class SetupLine:
    """One family of a setup check (``family_losses.SetupRow``): ``count`` parameters, ``edge``:
    its rate is the grid's lowest or highest, ``fall``: the late fall of its training loss."""

    family: str
    width: int
    count: int
    lr: float
    edge: bool
    in_dist: float
    in_seeds: tuple[float, ...]
    ood: float
    ood_seeds: tuple[float, ...]
    fall: float


def setup_lines(config, tensors, gd_in: float, gd_ood: float) -> list[SetupLine]:
    """A ``SetupLine`` per family of a setup check (``setup_rows``)."""
    return [
        SetupLine(
            family(r.family).label,
            r.width,
            r.count,
            r.lr,
            r.at_grid_edge,
            r.in_dist_mean,
            r.in_dist,
            r.ood_mean,
            r.ood,
            r.fall,
        )
        for r in setup_rows(config, tensors, gd_in, gd_ood)
    ]


def setup_scored(
    config, tensors, gd_in: float, gd_ood: float, *, source: str, run: str = SETUP_RUN
) -> list[Scored]:
    """The row ``fig4b.setup.<family>_learns`` per family: its seed-mean in-distribution loss over
    one GD step's, noted with ``source``, its rate and its OOD ratio."""
    return [
        Scored(
            f"fig4b.setup.{r.family}_learns",
            r.in_dist_mean,
            len(config.seeds),
            f"{source}; lr {r.lr:g}; OOD / GD {r.ood_mean:.3g}",
            run,
        )
        for r in setup_rows(config, tensors, gd_in, gd_ood)
    ]


@dataclasses.dataclass(frozen=True)
class PilotLine:
    """One pilot; ``curve``: training loss over GD's in the logged windows (at most five)."""

    family: str
    change: str
    steps: int
    loss: float
    curve: tuple[float, ...]


def pilot_lines(runs, gd_loss: float) -> list[PilotLine]:
    """A ``PilotLine`` per (PilotConfig, tensors) of ``runs``. ValueError: ``gd_loss`` <= 0."""
    if not gd_loss > 0:
        raise ValueError(f"the GD loss must be positive, got {gd_loss!r}")
    lines = []
    for config, tensors in runs:
        loss = float(tensors["eval_loss"].nan_to_num(nan=float("inf"))[0]) / gd_loss
        curve = tensors["train_curve"]
        if curve.numel() > 5:  # five windows at most: the end of each fifth of the budget
            curve = curve[torch.linspace(0, curve.numel() - 1, 6).round().long()[1:]]
        lines.append(
            PilotLine(
                family(config.family).label,
                config.change,
                config.train.steps,
                loss,
                tuple(float(v) / gd_loss for v in curve),
            )
        )
    return lines


def pilot_loss(pairs, gd_in: float, family: str, change: str, steps: int) -> float:
    """The held-out loss over ``gd_in`` of the pilot of ``pairs`` with this family, change and
    steps. ValueError unless exactly one matches."""
    found = [
        t for c, t in pairs if c.family == family and c.change == change and c.train.steps == steps
    ]
    if len(found) != 1:
        raise ValueError(
            f"{len(found)} pilots of {family!r} with change {change!r} and {steps} steps"
        )
    return float(found[0]["eval_loss"][0]) / gd_in


def _pct(ratio: float) -> float:
    """How far a ratio to one GD step lies from 1, in per cent: 1.08 and 0.92 are 8."""
    return abs(100 * (ratio - 1))


def setup_numbers(config, tensors, gd_in: float, gd_ood: float) -> dict[str, float]:
    """Numbers the prose quotes from the setup check (name -> number; distance to GD: per cent)."""
    rows = {r.family: r for r in setup_rows(config, tensors, gd_in, gd_ood)}
    gated, lrus = rows["gated"], [rows[f] for f in config.families if f.startswith("lru")]
    return {
        "gated-in": gated.in_dist_mean,
        "gated-low": min(gated.in_dist),
        "gated-high": max(gated.in_dist),
        "gated-above": _pct(gated.in_dist_mean),
        "gru-below": _pct(rows["gru"].in_dist_mean),
        "gru-ood-above": _pct(rows["gru"].ood_mean),
        "lstm-ood-above": _pct(rows["lstm"].ood_mean),
        "lru-low": min(r.in_dist_mean for r in lrus),
        "lru-high": max(r.in_dist_mean for r in lrus),
        "zero": 0.5 / gd_in,
        "zero-ood": 1.0 / gd_ood,
    }


def pilot_numbers(pairs, gd_in: float) -> dict[str, float]:
    """Numbers the prose quotes from the pilots (name -> number): the gated RNN with Sec. 5.2's
    readout (distance to GD, per cent), the LRU's variants (loss over GD's)."""
    readout = "lr 0.01, warm-up 200, readout_scale 0.1"
    scaled = "lr 0.01, warm-up 200, init_scale"

    def loss(family: str, change: str, steps: int) -> float:
        return pilot_loss(pairs, gd_in, family, change, steps)

    return {
        "readout-fifth": _pct(loss("gated", readout, 1000)),
        "readout-all": _pct(loss("gated", readout, 5000)),
        "lr1e-3": loss("lru", "lr 0.001, warm-up 200", 5000),
        "sqrt3": loss("lru", f"{scaled} 1.73", 5000),
        "scale3": loss("lru", f"{scaled} 3", 5000),
    }


def lru_init_numbers(config, tensors, gd_in: float, gd_ood: float) -> dict[str, float]:
    """The numbers the prose quotes from the check with larger LRU maps (name -> number);
    ``"lru-searched"``: the LRU's loss on the rate search's held-out seed at its chosen rate."""
    rows = {r.family: r for r in setup_rows(config, tensors, gd_in, gd_ood)}
    lru, mlp, inout = rows["lru"], rows["lru_inout_mlp"], rows["lru_inout"]
    k = [i for i, g in enumerate(config.sweep().groups()) if g[0] == "lru" and g[2] == lru.lr]
    searched = float(tensors["sweep_eval_loss"][k[0]].mean()) / gd_in
    return {
        "inout-in": inout.in_dist_mean,
        "inout-ood": inout.ood_mean,
        "lru-searched": searched,
        "lru-rate": lru.lr,
        "lru-scored": lru.in_dist_mean,
        "mlp-low": min(mlp.in_dist),
        "mlp-high": max(mlp.in_dist),
    }


def late_rate(train) -> tuple[float, float]:
    """The cosine schedule of ``train`` over its peak at the start of the last fifth, at the end."""
    from ..engine import cosine_lr

    return cosine_lr(int(0.8 * train.steps), train) / train.lr, train.eta_min / train.lr
