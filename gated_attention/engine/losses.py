"""The loss of one training step: what it reads (``LossSpec``) and, for the autograd paths
(``steps.ForwardStep``, ``steps.ReferenceStep``), the loss function itself (``loss_function``,
``cross_entropy``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..models.fast_path import forward_packed
from ..models.gated_rnn import gated_rnn_forward
from ..tasks.protocol import masked_mse

Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class LossSpec:
    """What a step's loss reads: packed (fused Eq. (2) on packed weights) or a model's own
    ``forward`` (None: Eq. (2)); kind, "mse" or "cross_entropy"; the task's T; out_steps, the
    time steps the loss reads (None: all), on the device; loss_mask (T,) bool for the
    reference's ``masked_mse``; scale, the task's loss scale."""

    packed: bool
    forward: Callable | None
    kind: str
    T: int
    out_steps: torch.Tensor | None
    loss_mask: torch.Tensor | None
    scale: float


def loss_function(
    P: dict[str, torch.Tensor], masks: dict[str, torch.Tensor] | None, spec: LossSpec
) -> Loss:
    """The (E,) losses of one step from the trained tensors P (packed or not) times ``masks``."""
    packed, forward, T = spec.packed, spec.forward, spec.T
    out_steps, scale = spec.out_steps, spec.scale

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        p = P if masks is None else {k: P[k] * masks[k] for k in P}
        if packed:  # x (E, d+1, T*B), y (E, d_out, T'*B): neuron-major
            y_hat = forward_packed(x, p, T, out_steps)
            return scale * (y_hat - y).square().mean(dim=(1, 2))
        if forward is not None:  # y already at the loss's steps
            y_hat = forward(x, p)
            y_hat = y_hat if out_steps is None else y_hat[:, :, out_steps]
            if spec.kind == "cross_entropy":
                return cross_entropy(y_hat, y)
            return scale * (y_hat - y).square().mean(dim=(-3, -2, -1))
        y_hat = gated_rnn_forward(x, p, mode="reference")  # the readable definition
        return masked_mse(y_hat, y, spec.loss_mask, scale)

    return loss


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(E,) mean cross-entropy of logits (E, B, T', V) against the classes of the one-hot
    targets y (E, B, T', V): App. D.3's loss, the outputs at the loss's steps read as logits."""
    E = logits.shape[0]
    loss = F.cross_entropy(logits.flatten(0, -2), y.argmax(dim=-1).flatten(), reduction="none")
    return loss.view(E, -1).mean(dim=1)
