"""The single-member optimiser comparison (``experiments.optimiser_comparison``; ours, not the
paper's): one recorded network continued with each optimiser, as rows of numbers."""

from __future__ import annotations

import dataclasses

from ..analysis.consolidation import construction_counts


@dataclasses.dataclass(frozen=True)
class OptimiserRow:
    """One optimiser: ``end`` its pruned counts (hidden = lam~1 + lam~0, output), ``first_step``
    the first recorded step with at most the construction's hidden neurons (None: never)."""

    optimiser: str
    lr: float
    wd: float
    end: tuple[int, int, int, int]
    first_step: int | None
    train_loss: float
    held_out: float


def _first_at_most(steps, counts, target: int):
    hits = [int(s) for s, c in zip(steps, counts, strict=True) if int(c) <= target]
    return hits[0] if hits else None


def optimiser_rows(result) -> tuple[tuple[int, ...], tuple[int, int, int], list[OptimiserRow]]:
    """(the pruned counts at the start (hidden, lam~1, lam~0, output), the construction's (hidden,
    lam~1, lam~0), an ``OptimiserRow`` per optimiser) of an ``OptimiserComparisonConfig`` result."""
    config, t, m = result.config, result.tensors, result.metrics
    steps = t["steps"].tolist()
    first = config.optimisers[0]
    d = t["start"]["W_in1"].shape[1] - 1
    c = construction_counts(d)
    target = c["one"] + c["zero"]
    start = tuple(t[first]["counts"][0].tolist())
    rows = []
    for name in config.optimisers:
        counts = t[name]["counts"]
        rows.append(
            OptimiserRow(
                name,
                config.lr(name),
                config.weight_decay(name),
                tuple(counts[-1].tolist()),
                _first_at_most(steps, counts[:, 0], target),
                float(t[name]["train_loss"][-1]),
                m["eval_loss"][name],
            )
        )
    return start, (target, c["one"], c["zero"]), rows
