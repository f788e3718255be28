"""The products a run needs with every member at its own size: the floor under its device time
that no fusing, graphing or overlapping of kernels goes under, and no choice of ensembles either.

An ensemble trains its members at its largest member's shapes: a size sweep's members masked
inside the largest (``engine.stack_students``), a family's parameter targets zero-padded to the
widest (``ArchitectureConfig.groups_together``). Its counted FLOPs (``device_time``) include that
padding, which a GPU computes. Here each member is counted at its own size instead:

    own_size_config(config)   the config with its groups trained apart (``groups_together`` off)
    own_size_runs(run)        a masked ensemble cut into one run per member shape, each member's
                              parameters cut to its own block (its mask's ones), no masks

and each such run's FLOPs are counted as the plan counts a step's (``flops_per_step``: the
matrix products, forward and backward). At the GPU's measured float32 matmul peak their sum is
the least device time of the run's products (``gpu_plan``'s "floor"). Those are the products
this implementation issues; ``per_parameter(run)`` estimates those of any implementation of the
same models: ``PER_PARAMETER`` FLOPs a parameter of each member and a token (a scan may issue
more: the dense RNN's doubling scan about five times its recurrence's sequential products).

Glossary (code name -> meaning):
    box     the extents of a member's own block in each parameter: (E, ...) -> (...)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

__all__ = ["PER_PARAMETER", "own_size_config", "member_box", "own_size_runs", "per_parameter"]

#: FLOPs a parameter and token: 2 forward (a multiply and an add), 4 backward (the input's
#: gradient and the parameter's)
PER_PARAMETER = 6


def own_size_config(config: Any) -> Any:
    """``config`` with every group trained on its own (no zero-padded groups together)."""
    if getattr(config, "groups_together", False):
        return dataclasses.replace(config, groups_together=False)
    return config


def member_box(masks: dict[str, torch.Tensor], e: int) -> tuple[tuple[int, ...], ...]:
    """Member e's own shape in each parameter (sorted by name): the extents of the ones of its
    mask, which must fill that block exactly (``stack_students`` puts a member in the top-left
    block); a ValueError names a parameter where they do not."""
    box = []
    for name in sorted(masks):
        mask = masks[name][e] != 0
        if not bool(mask.any()):
            raise ValueError(f"member {e}'s mask of {name} has no ones: it has no parameters")
        extents = tuple(int(idx.max()) + 1 for idx in mask.nonzero(as_tuple=True))
        block = mask[tuple(slice(0, k) for k in extents)]
        if int(mask.sum()) != block.numel() or not bool(block.all()):
            raise ValueError(
                f"member {e}'s mask of {name} is not one top-left block: "
                "it cannot be cut to its own size"
            )
        box.append(extents)
    return tuple(box)


def own_size_runs(run: dict) -> list[dict]:
    """``run`` (a ``device_time.job_run`` result) as runs whose members train at their own
    sizes: itself where nothing is masked, else one run per distinct member shape (members in
    their order), each member's parameters cut to its block, its tasks, data seeds and rates
    with it, no masks."""
    masks = run.get("masks")
    if masks is None or all(bool(v.all()) for v in masks.values()):
        return [run]
    by_box: dict[tuple, list[int]] = {}
    for e in range(len(run["tasks"])):
        by_box.setdefault(member_box(masks, e), []).append(e)
    names = sorted(masks)
    out = []
    for box, members in by_box.items():
        idx = torch.tensor(members)
        params = {
            name: run["params"][name][idx][(slice(None), *(slice(0, k) for k in extents))]
            for name, extents in zip(names, box, strict=True)
        }
        rates = run.get("member_lrs")
        out.append({
            **run,
            "tasks": [run["tasks"][e] for e in members],
            "params": params,
            "data_seeds": [run["data_seeds"][e] for e in members],
            "masks": None,
            "member_lrs": None if rates is None else [rates[e] for e in members],
        })  # fmt: skip
    return out


def per_parameter(run: dict) -> float:
    """``PER_PARAMETER`` FLOPs for each parameter of each member and each token of a step
    (batch x T): about the products of any implementation of the models, forward and
    backward, whatever its scan (an estimate: a diagonal recurrence's parameters multiply
    less, a doubling scan more)."""
    members = len(run["tasks"])
    params = sum(v.numel() for v in run["params"].values()) / members
    tokens = run["config"].batch_size * run["tasks"][0].T
    return PER_PARAMETER * params * tokens * members
