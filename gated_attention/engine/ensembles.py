"""Ensembles of students: GatedRNNs of different sizes stacked into one (E, ...) computation
(smaller members masked inside the largest), the cost model that splits a size sweep into a few
ensembles, and ``train_by_size``, which trains them one after another."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from ..models.gated_rnn import GatedRNN
from ..tasks.protocol import Task
from .config import TrainConfig, TrainResult
from .device import resolve_device
from .loop import train


def stack_students(students: Sequence[GatedRNN]) -> tuple[dict, dict]:
    """Stack GatedRNNs of equal d, d_out and gating kind (n, m may differ) into an ensemble:
    ``(params, masks)`` of (E, ...) float64, a smaller member zero-padded in the top-left block,
    its mask 1 exactly on its own entries."""
    if not students:
        raise ValueError("stack_students needs at least one GatedRNN")
    first = students[0]
    for s in students:
        if not isinstance(s, GatedRNN):
            raise TypeError(f"expected GatedRNN members, got {type(s).__name__}")
        if (s.d, s.d_out, s.side) != (first.d, first.d_out, first.side):
            raise ValueError(
                "ensemble members must share d, d_out and the gating kind; got "
                f"{(first.d, first.d_out, first.side)} and {(s.d, s.d_out, s.side)}"
            )
    params, masks = {}, {}
    for name, _ in first.named_parameters():
        shapes = [getattr(s, name).shape for s in students]  # padded to each dim's largest
        P = torch.zeros(len(students), *map(max, zip(*shapes, strict=True)), dtype=torch.float64)
        Mk = torch.zeros_like(P)
        for e, s in enumerate(students):
            w = getattr(s, name).detach().to(torch.float64)
            idx = (e, *(slice(0, k) for k in w.shape))
            P[idx] = w
            Mk[idx] = 1.0
        params[name], masks[name] = P, Mk
    return params, masks


def unstack_students(
    params: dict[str, torch.Tensor],
    sizes: Sequence[Sequence[int]],
    dtype: torch.dtype = torch.float64,
) -> list[GatedRNN]:
    """The inverse of ``stack_students``: member e becomes a GatedRNN with (n, m) = sizes[e]."""
    side = "W_side" in params
    d = params["W_in1"].shape[-1] - 1
    d_out = params["D"].shape[-2]
    if len(sizes) != params["nu"].shape[0]:
        raise ValueError(f"{len(sizes)} sizes for an ensemble of {params['nu'].shape[0]}")
    out = []
    for e, (n, m) in enumerate(sizes):
        rnn = GatedRNN(d, n, 0 if side else m, d_out, side=side, dtype=dtype)
        with torch.no_grad():
            for name, p in rnn.named_parameters():
                src = params[name][e][tuple(slice(0, k) for k in p.shape)]
                p.copy_(src.to(dtype))
        out.append(rnn)
    return out


#: what one more ensemble adds to a training step, in multiply-adds of ``forward_macs``: fitted
#: on the project's 2-core CPU (~1.2 ms per ensemble and step, ~0.06 ms per million)
ENSEMBLE_OVERHEAD_MACS = 20e6
#: the same on a GPU, launch-bound: ~20 kernels of a compiled step at ~7 us each on the recorded
#: H200 bench, the time of ~1e9 forward multiply-adds with their backward there
GPU_ENSEMBLE_OVERHEAD_MACS = 1e9


def forward_macs(d: int, d_out: int, n: int, m: int, T: int, B: int, side: bool = False) -> int:
    """Multiply-adds of one forward of Eq. (2) for one member and a batch of B sequences."""
    if side:
        return T * B * (n * (3 * (d + 1) + T) + d_out * n)
    return T * B * (n * (2 * (d + 1) + T + 2 * m) + d_out * m)


def size_groups(
    sizes: Sequence[tuple[int, int]],
    cost: Callable[[int, int], float],
    overhead: float = ENSEMBLE_OVERHEAD_MACS,
    *,
    overlap: bool = False,
) -> list[list[int]]:
    """Split members of sizes[e] = (n_e, m_e) into ensembles trained apart: the member indices
    of each (sizes ascending, one size together), the split into consecutive runs of sizes that
    minimises the sum of ``overhead + members * cost(largest n, largest m)`` exactly (dynamic
    programming); ``overlap`` (a GPU): of the larger of the two instead.
    """
    classes = sorted(set(sizes))
    counts = [sum(1 for s in sizes if s == c) for c in classes]
    K = len(classes)
    best, cut = [0.0] + [math.inf] * K, [0] * (K + 1)
    for j in range(1, K + 1):
        for i in range(j):  # one ensemble of the sizes classes[i:j]
            n = max(c[0] for c in classes[i:j])
            m = max(c[1] for c in classes[i:j])
            work = sum(counts[i:j]) * cost(n, m)
            total = best[i] + (max(overhead, work) if overlap else overhead + work)
            if total < best[j]:
                best[j], cut[j] = total, i
    runs, j = [], K
    while j > 0:
        runs.append(set(classes[cut[j] : j]))
        j = cut[j]
    return [[e for e, s in enumerate(sizes) if s in run] for run in reversed(runs)]


def plan_ensembles(
    sizes: Sequence[tuple[int, int]],
    d: int,
    d_out: int,
    T: int,
    B: int,
    side: bool = False,
    *,
    overhead: float | None = None,
    device: str | torch.device = "cpu",
) -> list[list[int]]:
    """How ``train_by_size`` splits members of sizes (n_e, m_e) on ``device``: ``size_groups``
    with the cost ``forward_macs`` (``overhead`` None: the device's ``*ENSEMBLE_OVERHEAD_MACS``)."""
    on_cpu = torch.device(device).type == "cpu"
    if overhead is None:
        overhead = ENSEMBLE_OVERHEAD_MACS if on_cpu else GPU_ENSEMBLE_OVERHEAD_MACS
    return size_groups(
        sizes,
        lambda n, m: forward_macs(d, d_out, n, m, T, B, side),
        overhead,
        overlap=not on_cpu,
    )


def train_by_size(
    tasks: Sequence[Task],
    students: Sequence[GatedRNN],
    config: TrainConfig,
    *,
    data_seeds: Sequence[int],
    checkpoint: str | os.PathLike | None = None,
    progress: bool = True,
    desc: str = "training",
    device: str | torch.device | None = None,
    overhead: float | None = None,
    groups: Sequence[Sequence[int]] | None = None,
    on_nonfinite: str = "raise",
) -> TrainResult:
    """``train`` for GatedRNNs of different sizes: a few ensembles of similar sizes, one after
    another, each member's run the same as in one ensemble (tested); one TrainResult for all.

    Ensemble k checkpoints to ``<stem>-<k><suffix>`` beside ``checkpoint``, deleted once all
    have finished. ``groups``: the member indices of each ensemble, instead of
    ``plan_ensembles``'s split (``overhead`` as there).
    """
    if len(students) != len(tasks):
        raise ValueError(f"{len(students)} students for {len(tasks)} tasks")
    if len(data_seeds) != len(tasks):
        raise ValueError(f"{len(data_seeds)} data_seeds for {len(tasks)} tasks")
    groups = _member_groups(students, tasks, config, device, overhead, groups)
    files = _group_checkpoints(checkpoint, len(groups))
    results = []
    for k, idx in enumerate(groups):
        n_k = max(students[e].n for e in idx)
        results.append(
            train_ensemble(
                [tasks[e] for e in idx],
                [students[e] for e in idx],
                config,
                data_seeds=[data_seeds[e] for e in idx],
                checkpoint=files[k],
                progress=progress,
                desc=desc if len(groups) == 1 else f"{desc} n<={n_k}",
                device=device,
                on_nonfinite=on_nonfinite,
            )
        )
    if checkpoint is not None and len(groups) > 1:
        for f in files:
            f.unlink(missing_ok=True)
    return combine_ensembles(students, groups, results, config.torch_dtype)


def _member_groups(
    students: Sequence[GatedRNN],
    tasks: Sequence[Task],
    config: TrainConfig,
    device: str | torch.device | None,
    overhead: float | None,
    groups: Sequence[Sequence[int]] | None,
) -> list[list[int]]:
    """``groups`` checked to split the members, else ``plan_ensembles``'s split."""
    if groups is None:
        s0, dev = students[0], resolve_device(device)
        sizes = [(s.n, s.m) for s in students]
        return plan_ensembles(
            sizes, s0.d, s0.d_out, tasks[0].T, config.batch_size, s0.side,
            overhead=overhead, device=dev,
        )  # fmt: skip
    if any(not g for g in groups) or sorted(sum(map(list, groups), [])) != [*range(len(tasks))]:
        raise ValueError(f"groups must split the members 0..{len(students) - 1}, got {groups}")
    return [list(g) for g in groups]


def _group_checkpoints(checkpoint: str | os.PathLike | None, n_groups: int) -> list[Path | None]:
    """One checkpoint file per ensemble (``train_by_size``)."""
    path = None if checkpoint is None else Path(checkpoint)
    if path is None or n_groups == 1:
        return [path] * n_groups
    return [path.with_name(f"{path.stem}-{k}{path.suffix}") for k in range(n_groups)]


def train_ensemble(
    tasks: Sequence[Task], students: Sequence[GatedRNN], config: TrainConfig, **kwargs
) -> TrainResult:
    """``train`` on GatedRNNs of any sizes as one ensemble (``stack_students``); ``kwargs``:
    ``train``'s (a member index in its errors counts within this ensemble)."""
    params, masks = stack_students(students)
    return train(tasks, params, config, masks=masks, **kwargs)


def combine_ensembles(
    students: Sequence[GatedRNN],
    groups: Sequence[Sequence[int]],
    results: Sequence[TrainResult],
    dtype: torch.dtype = torch.float32,
) -> TrainResult:
    """One TrainResult for all ``students`` from those of the ensembles ``groups`` (member
    indices), in ``stack_students``'s layout, wall_time and resumed_from summed; a ValueError
    unless the ensembles cover every member exactly once."""
    covered = sorted(e for g in groups for e in g)
    if covered != list(range(len(students))):
        raise ValueError(f"the ensembles cover members {covered}, not 0..{len(students) - 1}")
    full, _ = stack_students(students)
    params = {k: torch.zeros_like(v, dtype=dtype) for k, v in full.items()}
    losses, loss_steps, wall, resumed = None, None, 0.0, 0
    for idx, res in zip(groups, results, strict=True):
        idx = list(idx)
        for name, v in res.params.items():  # back into the (E, ...) layout, zero-padded
            params[name][(idx, *(slice(0, s) for s in v.shape[1:]))] = v
        if losses is None:
            loss_steps = res.loss_steps
            losses = torch.zeros(len(loss_steps), len(students), dtype=res.losses.dtype)
        losses[:, idx] = res.losses
        wall += float(res.wall_time)
        resumed += int(res.resumed_from)
    return TrainResult(params, loss_steps, losses, wall, resumed)
