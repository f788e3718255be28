"""A results entry's trained members as rows, whatever the experiment: the table ``python -m
gated_attention run`` prints."""

from __future__ import annotations

from numbers import Real
from typing import Any

import torch


def _numbers(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Real) for v in value)


def member_rows(result: Any) -> list[dict]:
    """One row per member of ``result`` (size and seed where recorded, then every per-member
    metric); per group and seed for an entry that keeps its losses so (Fig. 4); [] for neither."""
    metrics, tensors = result.metrics, result.tensors
    per_member = {k: v for k, v in metrics.items() if _numbers(v)}
    if per_member:
        E = max(len(v) for v in per_member.values())
        sizes, seeds = tensors.get("sizes"), tensors.get("seeds")
        rows = []
        for e in range(E):
            row: dict[str, Any] = {"member": e}
            if isinstance(sizes, torch.Tensor) and sizes.shape[0] == E:
                s = sizes[e]
                row["size"] = int(s) if s.dim() == 0 else "x".join(str(int(v)) for v in s)
            if isinstance(seeds, torch.Tensor) and seeds.shape[0] == E:
                row["seed"] = int(seeds[e])
            row |= {k: float(v[e]) for k, v in per_member.items() if len(v) == E}
            rows.append(row)
        return rows
    grid = {
        k: v
        for k, v in tensors.items()
        if isinstance(v, torch.Tensor) and v.dim() == 2 and k in ("final_train_loss", "eval_loss")
    }
    if not grid:
        return []
    G, S = next(iter(grid.values())).shape
    groups = metrics.get("groups") if isinstance(metrics.get("groups"), list) else None
    rows = []
    for g in range(G):
        label = groups[g] if groups is not None and len(groups) == G else g
        for s in range(S):
            row = {"group": " ".join(map(str, label)) if isinstance(label, list) else label}
            row |= {"seed": s, **{k: float(v[g, s]) for k, v in grid.items()}}
            rows.append(row)
    return rows
