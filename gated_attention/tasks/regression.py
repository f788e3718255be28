"""In-context linear regression (Sec. 5, App. D.2 of arXiv:2309.01775v2) and one GD step solving it.

Each sequence has its own W, T observations z_t = [x_t; y_t] with y_t = W x_t and x_t ~
U(-sqrt 3, sqrt 3)^{d_x} (unit variance), then the query z_q = [x_q; 0]. Only the query step is
scored, against y_q = W x_q, with 1/2 * mean over the d_y outputs of the squared error.
One GD step from W_0 = 0 predicts y^ = eta * sum_t y_t x_t^T x_q: a linear self-attention layer
(``gd_attention``) and, through App. A.4, a gated RNN (``gd_rnn``).

Glossary (code name -> symbol -> where):
    d_x, d_y      input / output dimensions                           Sec. 5.1 (3, 3)
    observations  the paper's T, number of (x_t, y_t) pairs           Sec. 5.1 (12)
    T             (task protocol) sequence length, observations + 1  (13)
    w_var         variance scale of W: entries ~ N(0, w_var / d_x)     (1 train, 2 OOD)
    z             the sequence [x_t; y_t]_{t<=T}, [x_q; 0]              (B, T, d_x+d_y)
    W             the per-sequence regression matrix W                  (B, d_y, d_x)
    y_q           the target W x_q                                      (B, d_y)
    eta           learning rate of the GD step, eta* = 5/74             App. D.2
    W_V, W_K, W_Q the attention layer of one GD step                    Eq. (1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from ..constructions.gated_rnn import construct_rnn
from ..models.attention import LinearSelfAttention
from ..models.gated_rnn import GatedRNN
from .protocol import QueryTask

#: eta* = 1 / (T + d_x - 2 + E[x^4]) = 5/74 and the loss of that step, 7/74 (gd_theory.derive()).
ETA_STAR = 5 / 74
GD_MIN_LOSS = 7 / 74
#: the loss of predicting 0: 0.5 E[y_q[i]^2] = 0.5 (W entries of variance 1/d_x, unit-variance x)
ZERO_LOSS = 0.5


@dataclass(frozen=True)
class InContextRegression(QueryTask):
    """The task of Sec. 5.1 (``tasks.protocol``); ``sample`` returns the targets W x_t at every
    step, ``loss_mask`` keeps only the query step."""

    d_x: int = 3
    d_y: int = 3
    observations: int = 12
    w_var: float = 1.0
    loss_scale: float = 0.5

    def __post_init__(self):
        for name in ("d_x", "d_y", "observations"):
            val = getattr(self, name)
            if not isinstance(val, int) or val < 1:
                raise ValueError(f"{name} must be a positive integer, got {val!r}")
        if not self.w_var > 0:
            raise ValueError(f"w_var must be positive, got {self.w_var!r}")

    @property
    def d(self) -> int:
        """Input dimension of the network: d_x + d_y."""
        return self.d_x + self.d_y

    @property
    def d_out(self) -> int:
        """Output dimension of the network: d_y."""
        return self.d_y

    @property
    def T(self) -> int:
        """Sequence length: the observations and one query."""
        return self.observations + 1

    def ood(self) -> InContextRegression:
        """The out-of-distribution validation task: W variance doubled."""
        return replace(self, w_var=2 * self.w_var)

    def sample_with_W(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """z (B, T, d), targets (B, T, d_y) and W (B, d_y, d_x), float64, from ``generator``, on
        its device (``draws_on_device``)."""
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        f64, dev = torch.float64, generator.device  # drawn where the generator lives
        W = torch.randn(batch_size, self.d_y, self.d_x, generator=generator, dtype=f64, device=dev)
        W = W * math.sqrt(self.w_var / self.d_x)
        a = math.sqrt(3.0)  # U(-a, a) has unit variance
        u = torch.rand(batch_size, self.T, self.d_x, generator=generator, dtype=f64, device=dev)
        x = (2 * u - 1) * a
        y = torch.einsum("bki,bti->btk", W, x)  # (B, T, d_y): W x_t at every step
        z = torch.cat([x, y], dim=-1)
        z[:, -1, self.d_x :] = 0.0  # the query step shows x_q only
        return z, y, W

    def sample(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """z (B, T, d) and the targets y (B, T, d_y), float64; y[:, -1] = y_q = W x_q."""
        z, y, _ = self.sample_with_W(batch_size, generator)
        return z, y

    def per_sequence_loss(self, y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """1/2 mean_k (y_hat[..., -1, k] - y[..., -1, k])^2: (..., B, T, d_y) -> (..., B)."""
        for name, v in (("y_hat", y_hat), ("y", y)):
            if v.dim() < 3 or v.shape[-1] != self.d_y or v.shape[-2] != self.T:
                raise ValueError(
                    f"{name} must have shape (..., B, T={self.T}, d_y={self.d_y}), "
                    f"got {tuple(v.shape)}"
                )
        return query_loss(y_hat[..., -1, :], y[..., -1, :])


def query_loss(y_hat: torch.Tensor, y_q: torch.Tensor) -> torch.Tensor:
    """1/2 * mean over the output dims of (y_hat - y_q)^2: (..., d_y) -> (...)."""
    if y_hat.shape != y_q.shape:
        raise ValueError(f"prediction {tuple(y_hat.shape)} and target {tuple(y_q.shape)} differ")
    return 0.5 * ((y_hat - y_q) ** 2).mean(dim=-1)


def _split(z: torch.Tensor, d_x: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if z.dim() < 3 or z.shape[-1] <= d_x:
        raise ValueError(
            f"z must have shape (..., B, T+1, d_x+d_y) with d_x={d_x}, got {tuple(z.shape)}"
        )
    x, y = z[..., :-1, :d_x], z[..., :-1, d_x:]  # the T observations
    return x, y, z[..., -1, :d_x]  # x_q


def gd_predict_reference(z: torch.Tensor, eta: float, d_x: int) -> torch.Tensor:
    """The readable definition: W^ = eta sum_t y_t x_t^T (a loop), y^ = W^ x_q. -> (..., B, d_y)."""
    x, y, x_q = _split(z, d_x)
    W_hat = torch.zeros(*y.shape[:-2], y.shape[-1], d_x, dtype=z.dtype)
    for t in range(x.shape[-2]):  # the gradient of 1/2||y - W x||^2
        W_hat = W_hat + eta * y[..., t, :, None] * x[..., t, None, :]
    return (W_hat @ x_q[..., None])[..., 0]


def gd_predict(z: torch.Tensor, eta: float, d_x: int) -> torch.Tensor:
    """y^ = eta sum_t y_t (x_t^T x_q), all sequences at once: z (..., B, T, d) -> (..., B, d_y)."""
    x, y, x_q = _split(z, d_x)
    scores = torch.einsum("...ti,...i->...t", x, x_q)  # x_t^T x_q
    return eta * torch.einsum("...t,...tk->...k", scores, y)


def gd_attention(
    d_x: int = 3, d_y: int = 3, eta: float = ETA_STAR, *, dtype: torch.dtype = torch.float64
) -> LinearSelfAttention:
    """One GD step as linear self-attention: W_V = eta [0 I_dy], W_K = W_Q = [I_dx 0].

    Its output at the query step is eta sum_t y_t x_t^T x_q (the query's own value y = 0 adds
    nothing); at earlier steps it is the same sum truncated at t, which the task does not score.
    """
    d = d_x + d_y
    W_V = torch.zeros(d_y, d, dtype=dtype)
    W_V[:, d_x:] = eta * torch.eye(d_y, dtype=dtype)
    W_K = torch.zeros(d_x, d, dtype=dtype)
    W_K[:, :d_x] = torch.eye(d_x, dtype=dtype)
    return LinearSelfAttention(W_V=W_V, W_K=W_K, W_Q=W_K.clone())


def gd_rnn(
    d_x: int = 3, d_y: int = 3, eta: float = ETA_STAR, *, dtype: torch.dtype = torch.float64
) -> GatedRNN:
    """The gated RNN of App. A.4 that computes one GD step: n = d_x (d_y + 1) = 12, m = d_x d_y."""
    return construct_rnn(gd_attention(d_x, d_y, eta, dtype=dtype), "low_rank")


def paired_difference(loss_a: torch.Tensor, loss_b: torch.Tensor) -> tuple[float, float]:
    """Mean and standard error of loss_a - loss_b over paired samples (last dim), measured on the
    same sequences: the shared noise cancels (a 1% difference of ~0.09 losses resolves)."""
    if loss_a.shape != loss_b.shape:
        raise ValueError(
            f"paired losses must have one shape, got {tuple(loss_a.shape)} and "
            f"{tuple(loss_b.shape)}"
        )
    diff = (loss_a - loss_b).to(torch.float64).flatten()
    if diff.numel() < 2:
        raise ValueError("a standard error needs at least two paired samples")
    return diff.mean().item(), (diff.std(unbiased=True) / math.sqrt(diff.numel())).item()


#: Monte Carlo sequences for the checks of App. D.2, per profile (SE ~ 0.14 / sqrt(n)).
MONTE_CARLO_SEQUENCES = {"smoke": 20_000, "quick": 1_000_000, "paper": 4_000_000}


def gd_loss_monte_carlo(
    task: InContextRegression,
    etas,
    n: int,
    *,
    seed: int,
    chunk: int = 50_000,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Monte Carlo loss of one GD step for each eta in ``etas``, on the same n sequences drawn
    ``chunk`` at a time from seed ``seed``: (mean, standard error), each (len(etas),)."""
    etas = torch.as_tensor(etas, dtype=torch.float64).reshape(-1)
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    g = torch.Generator().manual_seed(seed)
    s1 = torch.zeros_like(etas)
    s2 = torch.zeros_like(etas)
    done = 0
    while done < n:
        b = min(chunk, n - done)
        z, y = task.sample(b, g)
        p = gd_predict(z, 1.0, task.d_x)  # (b, d_y): the prediction per unit learning rate
        y_q = y[:, -1].expand(len(etas), -1, -1)
        loss = query_loss(etas[:, None, None] * p, y_q)  # (n_eta, b)
        s1 += loss.sum(-1)
        s2 += (loss**2).sum(-1)
        done += b
    mean = s1 / n
    var = (s2 - n * mean**2) / (n - 1)
    return mean, (var / n).sqrt()
