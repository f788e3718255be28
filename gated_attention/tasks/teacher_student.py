"""The teacher-student task of Sec. 4.1: i.i.d. N(0, I) input sequences labelled by a causal
linear self-attention teacher (Eq. 1); the loss counts every step.

Glossary (code name -> paper symbol -> section):
    teacher      the causal linear self-attention of Eq. (1) that labels the data   Sec. 4.1
    x            input sequence x_1..x_T, i.i.d. N(0, I) entries                      (B, T, d)
    y            teacher output y_t = M_t q_t at every step                          (B, T, d)
    T            sequence length (32 in the paper)                                   Sec. 4.1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..models.attention import LinearSelfAttention, check_finite, random_attention

#: sequences labelled at a time on the CPU (``TeacherStudentTask.labels``): their float64
#: (T, T) scores stay in a core's cache
LABEL_BLOCK = 256


@dataclass(frozen=True, eq=False)
class TeacherStudentTask:
    """Sec. 4.1: fresh i.i.d. N(0, I) sequences (new at every ``sample``) labelled by a linear
    self-attention ``teacher`` (any rank: Fig. 3B uses 6); NaN or inf in it is a ValueError."""

    teacher: LinearSelfAttention
    T: int = 32
    loss_scale: float = 1.0
    draws_on_device = True  # ``sample`` draws on its generator's device (not a field)

    def __post_init__(self) -> None:
        if not isinstance(self.teacher, LinearSelfAttention):
            raise TypeError(
                f"teacher must be a LinearSelfAttention, got {type(self.teacher).__name__}"
            )
        if isinstance(self.T, bool) or not isinstance(self.T, int) or self.T < 1:
            raise ValueError(f"T must be a positive integer, got {self.T!r}")
        for name in ("W_V", "W_K", "W_Q"):  # the layer may have been changed after it was built
            check_finite(
                getattr(self.teacher, name), f"the teacher's {name}", "a teacher's weights"
            )

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
        """A task whose teacher is ``random_attention(d, seed=seed, rank=rank, std=std)`` (its
        default std = 1/sqrt(d) is our choice: the paper does not give the teacher's scale)."""
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
        """x (batch_size, T, d) from ``draw_inputs`` and y = ``labels(x)``."""
        x = self.draw_inputs(batch_size, generator)
        return x, self.labels(x)

    def draw_inputs(self, batch_size: int, generator: torch.Generator) -> torch.Tensor:
        """x ~ N(0, I) of shape (batch_size, T, d), drawn in float32 (faster than float64) on the
        generator's device, then held in float64."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        dev = generator.device  # drawn where the generator lives (on a GPU: no host work)
        x = torch.randn(batch_size, self.T, self.d, generator=generator, device=dev)
        return x.to(torch.float64)

    def labels(self, x: torch.Tensor) -> torch.Tensor:
        """y = teacher(x) (N, T, d_v), float64, by the parallel form of Eq. (1); on the CPU
        ``LABEL_BLOCK`` sequences at a time (the same labels bit for bit)."""
        W = self.teacher
        block = LABEL_BLOCK if x.device.type == "cpu" else max(x.shape[0], 1)
        with torch.no_grad():
            W_V, W_K, W_Q = (w.to(x.device, torch.float64) for w in (W.W_V, W.W_K, W.W_Q))
            y = x.new_empty(*x.shape[:-1], W_V.shape[0])
            for i in range(0, x.shape[0], block):
                xi = x[i : i + block]
                v, k, q = xi @ W_V.T, xi @ W_K.T, xi @ W_Q.T  # (b, T, d_v), (b, T, d_k) twice
                scores = torch.bmm(q, k.transpose(1, 2)).tril_()  # q_t . k_s, s <= t: (b, T, T)
                torch.bmm(scores, v, out=y[i : i + block])  # y_t = sum_{s<=t} (q_t . k_s) v_s
            return y

    @staticmethod
    def labels_of_many(tasks: Sequence[TeacherStudentTask], x: torch.Tensor) -> torch.Tensor:
        """Every member's ``labels`` at once: x (E, N, T, d), member e's under task e's teacher
        -> y (E, N, T, d_v); as member by member up to rounding."""
        E, N, T, d = x.shape
        W_V, W_K, W_Q = (
            torch.stack([getattr(t.teacher, w).to(x.device, torch.float64) for t in tasks])
            for w in ("W_V", "W_K", "W_Q")
        )
        with torch.no_grad():
            flat = x.reshape(E, N * T, d)
            v, k, q = (
                torch.bmm(flat, W.transpose(1, 2)).view(E * N, T, -1) for W in (W_V, W_K, W_Q)
            )
            scores = torch.bmm(q, k.transpose(1, 2)).tril_()
            return torch.bmm(scores, v).view(E, N, T, -1)
