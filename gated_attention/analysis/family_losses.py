"""Reading a run of ``experiments.architectures``: each family's loss against its parameter
count (seed mean and spread) and the scorecard rows of Fig. 4A/B.

Glossary:
    key       "eval_loss" (Fig. 4A: normalised held-out loss) or "ood_loss" (Fig. 4B)
    members   the seeds of a family at the largest target, each kept or excluded: diverged (a
              non-finite loss) or not learned (Fig. 4A: normalised loss above 1, worse than
              predicting zero; Fig. 4B: in-distribution loss above 1.05 x one GD step's)
    rows      the scorecard rows: ratios of seed MEDIANS over the kept members, NaN with a
              premise note when a family keeps half of its seeds or fewer, with a bootstrap
              interval; the rules (``TODAY``, older ones: ``values_before``) are ``family_rules``'s
"""

from __future__ import annotations

import dataclasses

import torch

from .family_rules import (
    PREMISE,
    TODAY,
    Members,
    Row,
    Rule,
    bootstrap_interval,
    rule_row,
    values_before,
)

__all__ = [
    "Curve",
    "FIG4A_RATIOS",
    "Members",
    "PREMISE",
    "Row",
    "SetupRow",
    "WORSE_THAN_ZERO",
    "bootstrap_interval",
    "curves",
    "fig4a_rows",
    "fig4b_rows",
    "members",
    "unstable",
    "late_fall",
    "setup_rows",
    "values_before",
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
    """A ``Curve`` per family of the run (a diverged seed is +inf: in the mean too)."""
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


def members(
    config,
    tensors: dict,
    fam: str,
    key: str = "eval_loss",
    *,
    gate: str | None = None,
    bar: float = 1.0,
    scale: float = 1.0,
) -> Members:
    """The seeds of ``fam`` at the largest target, scored on ``key``: diverged when its ``key``
    or ``gate`` loss (default: ``key``) is non-finite, not learned when gate / scale > bar."""
    _, vals, _ = _rows(config, tensors, fam, key)[-1]
    target, gates, _ = _rows(config, tensors, fam, gate or key)[-1]
    vals, gates = vals.double(), gates.double()
    diverged = ~torch.isfinite(vals) | ~torch.isfinite(gates)
    not_learned = ~diverged & (gates.nan_to_num(nan=0.0) / scale > bar)
    return Members(
        family=fam,
        target=target,
        losses=tuple(float(v) for v in vals.nan_to_num(nan=float("inf"), neginf=float("inf"))),
        diverged=tuple(bool(v) for v in diverged),
        not_learned=tuple(bool(v) for v in not_learned),
    )


#: Fig. 4A's ratio rows: (numerator, denominator) families of each ratio of seed medians
FIG4A_RATIOS = {
    "fig4a.dense_vs_diagonal": ("dense", "gated"),
    "fig4a.dense_vs_diagonal_2x": ("dense", "gated"),
    "fig4a.lru_inout_below_lru": ("lru_inout", "lru"),
    "fig4a.glu_below_mlp": ("lru_inout", "lru_inout_mlp"),
    "fig4a.gated_below_lstm": ("gated", "lstm"),
    "fig4a.gated_below_gru": ("gated", "gru"),
}
#: why a Fig. 4A seed is not learned (normalised loss above 1)
WORSE_THAN_ZERO = "worse than predicting zero"


def _ratio(c, a, b) -> float:
    return c(a) / c(b)


def fig4a_rows(
    config, tensors: dict, *, rule: Rule = TODAY
) -> tuple[dict[str, Row], dict[str, Members]]:
    """Fig. 4A's rows (id -> ``Row``) from ``eval_loss``, and every family's members: the rows of
    ``FIG4A_RATIOS``, and ``fig4a.mlp_fails_like_lstm_gru`` (the MLP variant over the lower of
    the LSTM and the GRU). ``rule`` (``family_rules``): read the seeds as an older rule did."""
    ms = {f: members(config, tensors, f) for f in config.families}
    why = WORSE_THAN_ZERO
    rows = {}
    for id, (a, b) in FIG4A_RATIOS.items():
        rows[id] = rule_row(_ratio, [ms[a], ms[b]], f"{a} / {b}", why, "", rule)
    rows["fig4a.mlp_fails_like_lstm_gru"] = rule_row(
        lambda c, mlp, lstm, gru: c(mlp) / min(c(lstm), c(gru)),
        [ms["lru_inout_mlp"], ms["lstm"], ms["gru"]],
        "lru_inout_mlp / min(lstm, gru)",
        why,
        "",
        rule,
    )
    return rows, ms


def fig4b_rows(
    config, tensors: dict, gd_ood: float, *, gd_in: float, bar: float, rule: Rule = TODAY
) -> tuple[dict[str, Row], dict[str, Members], str | None]:
    """Fig. 4B's rows (id -> ``Row``) from ``ood_loss``, every family's members, and the family
    ``fig4b.gru_best`` compares the GRU with (None: no other family learned). A seed is excluded
    when its ``eval_loss`` / ``gd_in`` > ``bar``. The rows: GRU and LSTM over one GD step's
    ``gd_ood`` (median, and worst kept seed), the GRU over the best other family that learned
    (its interval resamples every such family), the LRU orderings."""
    if not (gd_in > 0 and gd_ood > 0):
        raise ValueError(f"the GD losses must be positive, got {gd_in!r}, {gd_ood!r}")
    ms = {
        f: members(config, tensors, f, "ood_loss", gate="eval_loss", bar=bar, scale=gd_in)
        for f in config.families
    }
    why, where = f"above {bar:g} x GD", " in distribution"

    def row(stat, fams, what):
        return rule_row(stat, [ms[f] for f in fams], what, why, where, rule)

    learned = [f for f in config.families if f != "gru" and rule.holds(ms[f])]
    best = min(learned, key=lambda f: rule.centre(rule.sample(ms[f]))) if learned else None
    rows = {}
    for fam in ("gru", "lstm"):
        rows[f"fig4b.{fam}_below_gd"] = row(lambda c, x: c(x) / gd_ood, [fam], f"{fam} / GD")
        rows[f"fig4b.{fam}_below_gd_significant"] = row(
            lambda c, x: max(x) / gd_ood, [fam], f"worst kept {fam} seed / GD"
        )
    if best is None:
        some = "a majority" if rule.majority else "any"
        note = f"{PREMISE}: no family other than gru learned{where} on {some} of its seeds"
        rows["fig4b.gru_best"] = Row(float("nan"), note)
    else:
        rows["fig4b.gru_best"] = row(
            lambda c, g, *others: c(g) / min(c(o) for o in others),
            ["gru", *learned],
            f"gru / {best}, the best other family that learned",
        )
    rows["fig4b.lru_inout_below_lru"] = row(_ratio, ["lru_inout", "lru"], "lru_inout / lru")
    rows["fig4b.lru_below_mlp"] = row(_ratio, ["lru", "lru_inout_mlp"], "lru / lru_inout_mlp")
    return rows, ms, best


def unstable(
    config, tensors: dict, key: str = "eval_loss", limit: float | None = 1.0
) -> list[tuple[str, int, int, int]]:
    """(family, target, bad seeds, seeds) of every group with a seed whose final loss is
    non-finite or above ``limit`` (None: non-finite only), in groups order."""
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
    """1 - (mean training loss of ``fam``'s last ``fraction`` of windows) / (that of the windows
    just before): near 0 when converged, large when still learning (largest target, seed mean)."""
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
    """One family of the Fig. 4B setup check (``experiments.families_in_context``); ``in_dist``,
    ``ood`` (E,): per-seed held-out losses over one optimal GD step's; ``at_grid_edge``: lr is
    the lowest or highest of the grid; ``fall``: ``late_fall``."""

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
        return sum(self.in_dist) / len(self.in_dist)

    @property
    def ood_mean(self) -> float:
        return sum(self.ood) / len(self.ood)


def setup_rows(config, tensors: dict, gd_loss: float, gd_ood_loss: float) -> list[SetupRow]:
    """A ``SetupRow`` per family of a setup check (``SetupCheckConfig``), each loss over one optimal
    GD step's: ``gd_loss`` (7/74 in distribution), ``gd_ood_loss`` (14/74, W variance doubled)."""
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
