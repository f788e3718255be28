"""Associative recall (App. D.3 of arXiv:2309.01775v2): store key-value pairs, then recall the
value of a queried key.

A sequence shows each of the N_k = ``n_keys`` keys once, in a random order, as the one-hot
[key; value] with one of N_v = ``n_values`` values; the last step is the query [key; 0], a key
drawn uniformly. The target is that key's value one-hot, scored at the query step only.

Our choices (Why: book/associative_recall.md): n_keys = n_values = 4; distinct values (a random
one-to-one pairing; ``distinct_values=False`` draws each i.i.d.); a masked, scaled MSE against
the one-hot target instead of the paper's cross-entropy, with ``accuracy`` beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .protocol import QueryTask


@dataclass(frozen=True)
class RecallBatch:
    """A batch with its latent structure: inputs, targets and the pairs behind them."""

    x: torch.Tensor  # (B, T, d) float64
    y: torch.Tensor  # (B, T, n_values) float64
    keys: torch.Tensor  # (B, n_keys) long: the key shown at each pair step (a permutation)
    values: torch.Tensor  # (B, n_keys) long: the value paired with it
    query: torch.Tensor  # (B,) long: the pair step whose key is queried

    @property
    def query_key(self) -> torch.Tensor:
        """(B,) the queried key."""
        return self.keys.gather(1, self.query[:, None])[:, 0]

    @property
    def answer(self) -> torch.Tensor:
        """(B,) the value paired with the queried key: the correct class."""
        return self.values.gather(1, self.query[:, None])[:, 0]


@dataclass(frozen=True)
class AssociativeRecall(QueryTask):
    """The task of App. D.3, following the task protocol of ``tasks.protocol``."""

    n_keys: int = 4
    n_values: int = 4
    distinct_values: bool = True
    loss_scale: float = 1.0

    def __post_init__(self) -> None:
        for name in ("n_keys", "n_values"):
            val = getattr(self, name)
            if isinstance(val, bool) or not isinstance(val, int) or val < 2:
                raise ValueError(f"{name} must be an integer >= 2, got {val!r}")
        if not isinstance(self.distinct_values, bool):
            raise TypeError(f"distinct_values must be a bool, got {self.distinct_values!r}")
        if self.distinct_values and self.n_values < self.n_keys:
            raise ValueError(
                f"distinct values need n_values >= n_keys, got n_values={self.n_values} and "
                f"n_keys={self.n_keys}"
            )
        if not self.loss_scale > 0:
            raise ValueError(f"loss_scale must be positive, got {self.loss_scale!r}")

    @property
    def d(self) -> int:
        """Input dimension: a key one-hot and a value one-hot."""
        return self.n_keys + self.n_values

    @property
    def d_out(self) -> int:
        """Output dimension: one score per value."""
        return self.n_values

    @property
    def T(self) -> int:
        """Sequence length: one step per key, then the query."""
        return self.n_keys + 1

    def sample_batch(self, batch_size: int, generator: torch.Generator) -> RecallBatch:
        """A batch with its keys, values and query, float64, drawn from ``generator`` only."""
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        B, K, V = batch_size, self.n_keys, self.n_values
        draw = dict(generator=generator, device=generator.device)  # where the generator lives
        keys = torch.rand(B, K, dtype=torch.float64, **draw).argsort(dim=1)
        if self.distinct_values:
            values = torch.rand(B, V, dtype=torch.float64, **draw).argsort(dim=1)[:, :K]
        else:
            values = torch.randint(V, (B, K), **draw)
        query = torch.randint(K, (B,), **draw)
        return self.encode(keys, values, query)

    def encode(self, keys: torch.Tensor, values: torch.Tensor, query: torch.Tensor) -> RecallBatch:
        """The one-hot sequences and targets of given pairs and queries, on ``keys``' device."""
        K, V = self.n_keys, self.n_values
        keys, values, query = (torch.as_tensor(a, dtype=torch.long) for a in (keys, values, query))
        B, dev = keys.shape[0], keys.device
        if keys.shape != (B, K) or values.shape != (B, K) or query.shape != (B,):
            raise ValueError(
                f"keys and values must have shape (B, n_keys={K}) and query (B,), got "
                f"{tuple(keys.shape)}, {tuple(values.shape)}, {tuple(query.shape)}"
            )
        if not torch.equal(keys.sort(dim=1).values, torch.arange(K, device=dev).expand(B, K)):
            raise ValueError("each sequence must show every key exactly once")
        if values.min() < 0 or values.max() >= V or query.min() < 0 or query.max() >= K:
            raise ValueError(f"values must lie in [0, {V}) and query in [0, {K})")
        rows = torch.arange(B, device=dev)
        x = torch.zeros(B, self.T, self.d, dtype=torch.float64, device=dev)
        steps = torch.arange(K, device=dev)
        x[rows[:, None], steps, keys] = 1.0
        x[rows[:, None], steps, K + values] = 1.0
        y = torch.zeros(B, self.T, V, dtype=torch.float64, device=dev)
        batch = RecallBatch(x, y, keys, values.to(dev), query.to(dev))
        x[rows, -1, batch.query_key] = 1.0
        batch.y[rows, -1, batch.answer] = 1.0
        return batch

    def sample(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, d) and y (B, T, n_values), float64; y is zero but at the query step."""
        batch = self.sample_batch(batch_size, generator)
        return batch.x, batch.y


def _query_outputs(y_hat: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if y_hat.shape != y.shape or y.dim() < 3:
        raise ValueError(
            f"y_hat and y must share a shape (..., B, T, n_values), got {tuple(y_hat.shape)} "
            f"and {tuple(y.shape)}"
        )
    return y_hat[..., -1, :], y[..., -1, :]


def accuracy(y_hat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Fraction of sequences whose largest output at the query step is the correct value:
    y_hat, y (..., B, T, n_values) -> (...)."""
    q_hat, q = _query_outputs(y_hat, y)
    return (q_hat.argmax(dim=-1) == q.argmax(dim=-1)).to(torch.float64).mean(dim=-1)


def query_mse(y_hat: torch.Tensor, y: torch.Tensor, loss_scale: float = 1.0) -> torch.Tensor:
    """The training loss: loss_scale x mean over sequences and outputs of the squared error at
    the query step. y_hat, y: (..., B, T, n_values) -> (...)."""
    q_hat, q = _query_outputs(y_hat, y)
    return loss_scale * (q_hat - q).square().mean(dim=(-2, -1))
