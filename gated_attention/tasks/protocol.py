"""The task protocol the training engine reads (Sec. 4 of arXiv:2309.01775v2), and the masked MSE.

The task protocol (what ``engine.train`` needs; ``Task`` below spells it out):
    d            input dimension
    d_out        output dimension (may differ from d: the in-context regression task has d = 6,
                 d_out = 3)
    T            sequence length
    loss_mask    None (every step counts) or a bool tensor (T,): e.g. only the last (query)
                 step for in-context regression. The engine computes the student's output only
                 at these steps (the output gating is most of the cost), so a mask also saves time.
    loss_scale   float multiplying the mean squared error (1.0 for the teacher-student MSE of
                 Sec. 4.1; 0.5 for the in-context regression loss of Sec. 5)
    sample(batch_size, generator) -> (x, y)
                 fresh data: x (batch_size, T, d), y (batch_size, T, d_out), float64, drawn from
                 ``generator`` only (same generator state, same numbers). The engine asks for many
                 steps at once (batch_size = steps * B) and splits the result into steps, so a
                 task must not assume one call per step.
    draws_on_device  (optional) True: ``sample`` draws on its generator's device and returns
                 tensors there, so that on a GPU the engine draws the data where it trains
                 (``data_on_device``); absent or False: the engine draws on the host (CPU
                 generators) and moves the data

Any object with these attributes is a task (a ``typing.Protocol``, no base class needed);
``check_task`` validates one and names what is missing.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

__all__ = ["Task", "check_task", "masked_mse"]


@runtime_checkable
class Task(Protocol):
    """What the training engine needs from a task (see the module docstring)."""

    d: int
    d_out: int
    T: int
    loss_mask: torch.Tensor | None
    loss_scale: float

    def sample(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]: ...


def check_task(task: object) -> Task:
    """Return ``task`` if it follows the task protocol; else a TypeError names what is off."""
    missing = [a for a in ("d", "d_out", "T", "loss_mask", "loss_scale") if not hasattr(task, a)]
    if not callable(getattr(task, "sample", None)):
        missing.append("sample(batch_size, generator)")
    if missing:
        raise TypeError(f"{type(task).__name__} is not a task: it lacks {', '.join(missing)}")
    mask = task.loss_mask
    if mask is not None and (mask.dtype != torch.bool or tuple(mask.shape) != (task.T,)):
        raise TypeError(
            f"{type(task).__name__}.loss_mask must be None or a bool tensor of shape "
            f"(T={task.T},), got dtype {mask.dtype} and shape {tuple(mask.shape)}"
        )
    if mask is not None and not bool(mask.any()):
        raise ValueError(f"{type(task).__name__}.loss_mask selects no time step")
    return task


def masked_mse(
    y_hat: torch.Tensor,
    y: torch.Tensor,
    loss_mask: torch.Tensor | None = None,
    loss_scale: float = 1.0,
) -> torch.Tensor:
    """loss_scale * mean over (batch, masked steps, outputs) of (y_hat - y)^2, per ensemble member.

    y_hat, y: (*E, B, T, d_out) -> loss (*E,). ``loss_mask`` (T,) bool selects the steps; None
    keeps all of them. This is the readable definition; the engine's fast path computes the
    output only at masked steps and then calls this with ``loss_mask=None``.
    """
    if y_hat.shape != y.shape:
        raise ValueError(f"y_hat and y differ in shape: {tuple(y_hat.shape)} vs {tuple(y.shape)}")
    if loss_mask is not None:
        y_hat, y = y_hat[..., loss_mask, :], y[..., loss_mask, :]
    return loss_scale * (y_hat - y).square().mean(dim=(-3, -2, -1))
