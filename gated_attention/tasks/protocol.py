"""The task protocol the training engine reads (Sec. 4 of arXiv:2309.01775v2), and the masked MSE.

The task protocol (what ``engine.train`` needs; ``Task`` below spells it out):
    d, d_out     input and output dimensions (they may differ: in-context regression 6 and 3)
    T            sequence length
    loss_mask    None (every step counts) or a bool tensor (T,), e.g. only the query step; the
                 engine computes the student's output only at these steps
    loss_scale   float multiplying the mean squared error (1.0 in Sec. 4.1; 0.5 in Sec. 5)
    sample(batch_size, generator) -> (x, y)
                 fresh data: x (batch_size, T, d), y (batch_size, T, d_out), float64, drawn from
                 ``generator`` only (same state, same numbers). The engine asks for many steps at
                 once (batch_size = steps * B): a task must not assume one call per step.
    draws_on_device  (optional) True: ``sample`` draws on its generator's device and returns
                 tensors there (on a GPU, ``data_on_device``); else the engine draws on the host

Any object with these attributes is a task (a ``typing.Protocol``); ``check_task`` validates one.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


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


class QueryTask:
    """Base of the tasks scored at their last (query) step only, drawn on the generator's device."""

    draws_on_device = True  # ``sample`` draws on its generator's device (not a field)

    @property
    def loss_mask(self) -> torch.Tensor:
        """(T,) bool: only the query step is scored."""
        mask = torch.zeros(self.T, dtype=torch.bool)
        mask[-1] = True
        return mask


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
    """loss_scale * mean over (batch, masked steps, outputs) of (y_hat - y)^2, per ensemble member:
    y_hat, y (*E, B, T, d_out) -> loss (*E,); ``loss_mask`` (T,) bool (None: every step)."""
    if y_hat.shape != y.shape:
        raise ValueError(f"y_hat and y differ in shape: {tuple(y_hat.shape)} vs {tuple(y.shape)}")
    if loss_mask is not None:
        y_hat, y = y_hat[..., loss_mask, :], y[..., loss_mask, :]
    return loss_scale * (y_hat - y).square().mean(dim=(-3, -2, -1))
