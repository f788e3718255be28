"""Causal linear self-attention, Eq. (1) of arXiv:2309.01775v2: the teacher.

Glossary (code name -> paper symbol):
    W_V, W_K, W_Q   value, key and query matrices W_V, W_K, W_Q       (d_v x d, d_k x d, d_k x d)
    v_t, k_t, q_t   W_V x_t, W_K x_t, W_Q x_t
    M_t             sum_{t' <= t} v_t' k_t'^T, the key-value matrix    (d_v x d_k)
    y_t             M_t q_t, the layer's output                         (d_v)

There is no softmax and no normalisation. Two forms compute the same function:
    parallel   Y = ((Q K^T) * causal_mask) V                          (what a Transformer does)
    recurrent  M_t = M_{t-1} + v_t k_t^T,  y_t = M_t q_t              (what an RNN can do)
"""

from __future__ import annotations

import numbers

import torch
from torch import nn


def check_finite(w: torch.Tensor, name: str, what: str = "attention weights") -> None:
    """Raise a ValueError naming ``name`` unless every entry of ``w`` is finite (not NaN, inf)."""
    bad = ~torch.isfinite(w.detach())
    if bool(bad.any()):
        first = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"{name} holds NaN or inf ({int(bad.sum())} of {w.numel()} entries, the first at "
            f"{first}: {w.detach()[first].item()}); {what} must be finite"
        )


class LinearSelfAttention(nn.Module):
    """Implements Eq. (1): ``y_t = sum_{t'<=t} (W_V x_t')(W_K x_t')^T (W_Q x_t)``.

    W_V (d_v, d), W_K and W_Q (d_k, d), keyword-only (they often share a shape: a swap by
    position would run silently); kept as trainable parameters in the dtype given. NaN or inf
    in a matrix, or an x of another dtype than the weights (no silent cast), is a ValueError.
    """

    def __init__(self, *, W_V: torch.Tensor, W_K: torch.Tensor, W_Q: torch.Tensor):
        super().__init__()
        W_V, W_K, W_Q = (torch.as_tensor(w) for w in (W_V, W_K, W_Q))
        for name, w in (("W_V", W_V), ("W_K", W_K), ("W_Q", W_Q)):
            if w.dim() != 2:
                raise ValueError(f"{name} must be a matrix, got shape {tuple(w.shape)}")
            check_finite(w, name)
        d = W_V.shape[1]
        if W_K.shape[1] != d or W_Q.shape[1] != d:
            raise ValueError(
                f"W_V, W_K, W_Q must all read inputs of the same size d; got shapes "
                f"{tuple(W_V.shape)}, {tuple(W_K.shape)}, {tuple(W_Q.shape)}"
            )
        if W_K.shape != W_Q.shape:
            raise ValueError(
                f"W_K and W_Q must have the same shape (d_k, d) for k^T q to exist; got "
                f"{tuple(W_K.shape)} and {tuple(W_Q.shape)}"
            )
        self.W_V = nn.Parameter(W_V.clone())
        self.W_K = nn.Parameter(W_K.clone())
        self.W_Q = nn.Parameter(W_Q.clone())

    def _check_input(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor):
            raise TypeError(
                f"x must be a torch.Tensor of shape (B, T, {self.d}), got {type(x).__name__}"
            )
        if x.dim() != 3 or x.shape[-1] != self.d:
            raise ValueError(f"x must have shape (B, T, d={self.d}), got {tuple(x.shape)}")
        if x.dtype != self.W_V.dtype:
            raise ValueError(
                f"x is {x.dtype} but the attention weights are {self.W_V.dtype}; cast one to "
                f"the other (x.to({self.W_V.dtype}) or layer.to({x.dtype}))"
            )

    @property
    def d(self) -> int:
        """Input dimension d."""
        return self.W_V.shape[1]

    @property
    def d_v(self) -> int:
        """Output (value) dimension."""
        return self.W_V.shape[0]

    @property
    def d_k(self) -> int:
        """Key / query dimension."""
        return self.W_K.shape[0]

    def forward(self, x: torch.Tensor, mode: str = "parallel") -> torch.Tensor:
        """Map x (B, T, d) to y (B, T, d_v); ``mode`` is "parallel" or "recurrent"."""
        if mode == "parallel":
            return self.forward_parallel(x)
        if mode == "recurrent":
            return self.forward_recurrent(x)
        raise ValueError(f"unknown mode {mode!r}; expected 'parallel' or 'recurrent'")

    def forward_parallel(self, x: torch.Tensor) -> torch.Tensor:
        """Y = ((Q K^T) * causal_mask) V, all time steps at once."""
        self._check_input(x)
        T = x.shape[1]
        V = x @ self.W_V.T  # (B, T, d_v)
        K = x @ self.W_K.T  # (B, T, d_k)
        Q = x @ self.W_Q.T  # (B, T, d_k)
        scores = Q @ K.transpose(1, 2)  # (B, T, T): scores[b, t, t'] = q_t . k_t'
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        return scores.masked_fill(~causal, 0.0) @ V  # (B, T, d_v)

    def forward_recurrent(self, x: torch.Tensor) -> torch.Tensor:
        """The readable reference: M_t = M_{t-1} + v_t k_t^T, y_t = M_t q_t."""
        self._check_input(x)
        B, T, _ = x.shape
        M = x.new_zeros(B, self.d_v, self.d_k)  # (B, d_v, d_k)
        ys = []
        for t in range(T):
            v = x[:, t] @ self.W_V.T  # (B, d_v)
            k = x[:, t] @ self.W_K.T  # (B, d_k)
            q = x[:, t] @ self.W_Q.T  # (B, d_k)
            M = M + v[:, :, None] * k[:, None, :]
            ys.append((M @ q[:, :, None])[:, :, 0])
        return torch.stack(ys, dim=1)  # (B, T, d_v)

    def key_value_states(self, x: torch.Tensor) -> torch.Tensor:
        """M_t for every t: (B, T, d_v, d_k). Used by the reverse-engineering scores."""
        self._check_input(x)
        V = x @ self.W_V.T
        K = x @ self.W_K.T
        return torch.cumsum(V[..., :, None] * K[..., None, :], dim=1)

    def queries(self, x: torch.Tensor) -> torch.Tensor:
        """q_t for every t: (B, T, d_k)."""
        self._check_input(x)
        return x @ self.W_Q.T


def _truncate_rank(W: torch.Tensor, rank: int) -> torch.Tensor:
    """Keep the ``rank`` largest singular values of W, zero the rest."""
    U, S, Vh = torch.linalg.svd(W, full_matrices=False)
    S[rank:] = 0.0
    return (U * S) @ Vh


def random_attention(
    d: int,
    *,
    seed: int,
    rank: int | None = None,
    std: float | None = None,
    dtype: torch.dtype = torch.float64,
) -> LinearSelfAttention:
    """A random d -> d attention layer with i.i.d. N(0, std^2) weights (std defaults to 1/sqrt(d)).

    With ``rank`` set, each of W_V, W_K, W_Q keeps only its ``rank`` largest singular values (the
    low-rank teacher of Sec. 4.2, Fig. 3B), so W_V and W_K^T W_Q have rank ``rank``.
    """
    if isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    if rank is not None and not 1 <= rank <= d:
        raise ValueError(f"rank must be between 1 and d={d}, got {rank}")
    std = d**-0.5 if std is None else std
    g = torch.Generator().manual_seed(seed)
    W = [torch.randn(d, d, generator=g, dtype=torch.float64) * std for _ in range(3)]
    if rank is not None:
        W = [_truncate_rank(w, rank) for w in W]
    W_V, W_K, W_Q = (w.to(dtype) for w in W)
    return LinearSelfAttention(W_V=W_V, W_K=W_K, W_Q=W_Q)
