"""The loss curve of a run: the members' losses summed over each window of ``log_every`` steps
on the device, averaged and kept when the window closes (the one read-back of a window)."""

from __future__ import annotations

import torch


class LossLog:
    """window (E,) on the device, losses [(E,) per window], loss_steps [last step of each].
    ``window`` is one tensor for the whole run, only changed in place (a captured step adds
    into it)."""

    def __init__(self, members: int, dtype: torch.dtype, device: torch.device):
        self.window = torch.zeros(members, dtype=dtype, device=device)
        self.losses: list[torch.Tensor] = []
        self.loss_steps: list[int] = []

    def resume(self, loss_steps: list[int], losses: list, window: torch.Tensor) -> None:
        """Continue the curve of a checkpoint (before any step object holds the window)."""
        dev, dtype = self.window.device, self.window.dtype
        self.loss_steps, self.losses = loss_steps, [w.to(dev) for w in losses]
        self.window = window.to(dtype=dtype, device=dev)

    def close(self, step: int) -> torch.Tensor:
        """End the window at ``step``: keep its mean and return it on the CPU (E,)."""
        n_win = step - (self.loss_steps[-1] if self.loss_steps else 0)
        self.losses.append(self.window / n_win)
        self.loss_steps.append(step)
        self.window.zero_()  # in place: a captured step adds into this very tensor
        return self.losses[-1].cpu()
