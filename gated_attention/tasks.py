"""Training tasks and the task protocol the training engine reads (Sec. 4, arXiv:2309.01775v2).

Glossary (code name -> paper symbol -> section):
    teacher      the causal linear self-attention of Eq. (1) that labels the data   Sec. 4.1
    x            input sequence x_1..x_T, i.i.d. N(0, I) entries                      (B, T, d)
    y            teacher output y_t = M_t q_t at every step                          (B, T, d)
    T            sequence length (32 in the paper)                                   Sec. 4.1
    loss_mask    the time steps the loss counts (None: all of them)                  (T,)
    loss_scale   the loss is loss_scale * mean_{b, t in mask, o} (y_hat - y)^2

The task protocol (what ``training.train`` needs; ``Task`` below spells it out):
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

Any object with these attributes is a task (a ``typing.Protocol``, no base class needed);
``check_task`` validates one and names what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from .attention import LinearSelfAttention, random_attention

__all__ = ["Task", "TeacherStudentTask", "check_task", "masked_mse"]


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


@dataclass(frozen=True, eq=False)
class TeacherStudentTask:
    """Sec. 4.1: fresh i.i.d. N(0, I) sequences labelled by a linear self-attention teacher.

    Every call to ``sample`` draws new sequences (no repetition); the loss counts every step.

    Args:
        teacher: the ``LinearSelfAttention`` of Eq. (1) (any rank: Fig. 3B uses rank 6).
        T: sequence length.
    """

    teacher: LinearSelfAttention
    T: int = 32
    loss_scale: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.teacher, LinearSelfAttention):
            raise TypeError(
                f"teacher must be a LinearSelfAttention, got {type(self.teacher).__name__}"
            )
        if not isinstance(self.T, int) or self.T < 1:
            raise ValueError(f"T must be a positive integer, got {self.T!r}")

    @classmethod
    def from_seed(
        cls,
        d: int,
        *,
        seed: int,
        T: int = 32,
        rank: int | None = None,
        std: float | None = None,
    ) -> TeacherStudentTask:
        """A task whose teacher is ``random_attention(d, seed=seed, rank=rank, std=std)``.

        The teacher's weights are i.i.d. N(0, std^2), std = 1/sqrt(d) by default (our choice:
        the paper does not give the teacher's scale); with ``rank`` each matrix keeps its
        ``rank`` largest singular values.
        """
        return cls(random_attention(d, seed=seed, rank=rank, std=std, dtype=torch.float64), T=T)

    @property
    def d(self) -> int:
        """Input dimension d."""
        return self.teacher.d

    @property
    def d_out(self) -> int:
        """Output dimension (the teacher's d_v)."""
        return self.teacher.d_v

    @property
    def loss_mask(self) -> None:
        """None: the MSE counts every time step."""
        return None

    def sample(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x ~ N(0, I) of shape (batch_size, T, d) and y = teacher(x), both float64.

        x is drawn in float32 (five times faster than float64) and then held in float64; the
        labels are computed in float64 from the parallel form of Eq. (1), y_t = sum_{s<=t}
        (q_t . k_s) v_s, as two batched products (measured on a 2-core CPU at d = 4, T = 32:
        half the time of the recurrent form M_t q_t, whose 4 x 4 products are tiny).
        """
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        x = torch.randn(batch_size, self.T, self.d, generator=generator).to(torch.float64)
        W = self.teacher
        with torch.no_grad():
            W_V, W_K, W_Q = (w.to(torch.float64) for w in (W.W_V, W.W_K, W.W_Q))
            v, k, q = x @ W_V.T, x @ W_K.T, x @ W_Q.T  # (B, T, d_v), (B, T, d_k), (B, T, d_k)
            scores = torch.bmm(q, k.transpose(1, 2)).tril_()  # q_t . k_s for s <= t: (B, T, T)
            y = torch.bmm(scores, v)  # y_t = sum_{s<=t} (q_t . k_s) v_s: (B, T, d_v)
        return x, y
