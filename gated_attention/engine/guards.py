"""What ``engine.train`` refuses, and how it stops: the ensemble's inputs checked before any step
(``check_ensemble``, ``check_gated_shapes``), the watch for divergence (``DivergenceGuard``) and
the error it raises (``NonFiniteLossError``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..tasks.protocol import Task

#: what ``train`` does when a member's loss or weights turn non-finite (``on_nonfinite``)
ON_NONFINITE = ("raise", "keep")


class NonFiniteLossError(ValueError):
    """A training run whose loss (or weights) went NaN or inf: it diverged.

    Attributes:
        steps      (first, last): the steps of the logged window (or chunk) where it was seen
        members    the ensemble indices whose loss or weights are non-finite
        checkpoint the last checkpoint file written with finite weights (None: none written)
        partial    the ``TrainResult`` up to the detection: the loss curve so far and the
                   parameters (the members not in ``members`` are intact)
    """

    def __init__(self, message: str, *, steps, members, checkpoint, partial) -> None:
        super().__init__(message)
        self.steps = steps
        self.members = members
        self.checkpoint = checkpoint
        self.partial = partial


def check_gated_shapes(task: Task, params: dict[str, torch.Tensor]) -> None:
    """A ValueError naming both sizes unless W_in1 (E, n, d+1) and D (E, d_out, m or n) of
    Eq. (2) fit the task's d and d_out."""
    W_in1, D = params.get("W_in1"), params.get("D")
    if W_in1 is None or D is None:
        missing = [k for k in ("W_in1", "D") if k not in params]
        raise ValueError(
            f"params lack {', '.join(missing)}: the gated RNN of Eq. (2) (forward=None) needs "
            f"W_in1, W_in2, nu, D and W_out1, W_out2 or W_side; got {', '.join(params)}"
        )
    if W_in1.dim() != 3 or W_in1.shape[-1] != task.d + 1:
        raise ValueError(
            f"the task has input size d={task.d} but the network is built for "
            f"d={W_in1.shape[-1] - 1} (W_in1 {tuple(W_in1.shape)} is (E, n, d+1))"
        )
    if D.dim() != 3 or D.shape[1] != task.d_out:
        raise ValueError(
            f"the task has output size d_out={task.d_out} but the network is built for "
            f"d_out={D.shape[1] if D.dim() > 1 else '?'} (D {tuple(D.shape)} is (E, d_out, m))"
        )


def check_ensemble(tasks, params, data_seeds, masks) -> None:
    E = len(tasks)
    if E == 0:
        raise ValueError("train needs at least one task")
    if len(data_seeds) != E:
        raise ValueError(f"{len(data_seeds)} data_seeds for {E} tasks")
    if not isinstance(params, dict) or not params:
        raise TypeError("params must be a non-empty dict of (E, ...) tensors")
    for k, v in params.items():
        if not isinstance(v, torch.Tensor) or v.dim() < 1 or v.shape[0] != E:
            shape = tuple(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__
            raise ValueError(f"params[{k!r}] must have leading ensemble dim E={E}, got {shape}")
        if masks is not None and (k not in masks or masks[k].shape != v.shape):
            raise ValueError(f"masks[{k!r}] must exist and have the shape of params[{k!r}]")
    t0 = tasks[0]
    for t in tasks[1:]:
        m, m0 = t.loss_mask, t0.loss_mask
        same_mask = m is None if m0 is None else m is not None and torch.equal(m, m0)
        same = (t.d, t.d_out, t.T, t.loss_scale) == (t0.d, t0.d_out, t0.T, t0.loss_scale)
        if not (same and same_mask):
            raise ValueError("ensemble tasks must share d, d_out, T, loss_mask and loss_scale")


def check_on_nonfinite(on_nonfinite: str) -> None:
    """``train``'s ``on_nonfinite`` is one of ON_NONFINITE, or a ValueError naming it."""
    if on_nonfinite not in ON_NONFINITE:
        raise ValueError(
            f"on_nonfinite must be one of {', '.join(ON_NONFINITE)}, got {on_nonfinite!r}"
        )


def nonfinite_members(P: dict[str, torch.Tensor]) -> torch.Tensor:
    """(E,) bool on the CPU: the members with a non-finite weight in ``P`` (one read-back)."""
    flags = [~torch.isfinite(v.detach()).flatten(1).all(dim=1) for v in P.values()]
    return torch.stack(flags).any(dim=0).cpu()


class DivergenceGuard:
    """A run's watch for divergence: ``check(bad, what, step)`` raises ``NonFiniteLossError``
    when ``bad`` (E,) flags a member (never with "keep"); ``good``: the last checkpoint with
    finite weights, (file, step) or None; ``stop`` closes the progress bar."""

    def __init__(
        self,
        on_nonfinite: str,
        config: Any,
        step: int,
        good: tuple[Path, int] | None,
        partial: Callable[[], Any],
        stop: Callable[[], None],
    ):
        self.on, self.c, self.checked, self.good = on_nonfinite, config, step, good
        self.partial, self.stop = partial, stop

    def check(self, bad: torch.Tensor, what: str, step: int) -> None:
        if self.on == "keep":
            return
        members = bad.nonzero().flatten().tolist()
        if not members:
            self.checked = step
            return
        self.stop()
        first, c, good = self.checked + 1, self.c, self.good
        saved = (
            f"the last checkpoint with finite weights is {good[0]} (step {good[1]})"
            if good is not None
            else "no checkpoint was written"
        )
        raise NonFiniteLossError(
            f"training diverged: the {what} of member(s) {members} (ensemble indices) became "
            f"NaN or inf in steps {first}-{step} (lr={c.lr:g}, optimiser {c.optimiser}, "
            f"{c.dtype}); {saved}; on_nonfinite='keep' trains on instead",
            steps=(first, step),
            members=members,
            checkpoint=None if good is None else good[0],
            partial=self.partial(),
        )
