"""Compressed output gating (ours, beyond the paper): y = M q, M symmetric, with d(d+1)/2
output-gating neurons instead of the d^2 of App. A.3 (the recipe: ``fill_compressed_output``).

    pair neuron (i, j), i < j:  h_(i,j) * (q_i + q_j)                = M_ij (q_i + q_j)
    diagonal neuron i:          (h_(i,i) - sum_{j != i} h_(i,j)) q_i
                                                    = (M_ii - sum_{j != i} M_ij) q_i

sum to y_i = sum_j M_ij q_j (eq-beyond-compressed; why, and that no fewer is possible
(``column_rank``): book/beyond.md). It needs the columns of W_K^T W_Q in the row space of
W_V = P_V R_V (rank r; always for an invertible W_V): then y_t = P_V sum (R_V x)(R_V x)^T (Q' x_t)
with Q' = R_V W_K^T W_Q, a symmetric r x r key-value matrix.

Glossary (code name -> symbol -> shape):
    A        R_V, value (= key) rows                           (r, d)
    C        Q', query rows                                    (r, d)
    P_V      readout of the value coordinates                  (d_out, r)
    kv       the stored entries (i, j), i <= j, of M           r(r+1)/2
"""

from __future__ import annotations

import torch

from ..models.attention import LinearSelfAttention, random_attention
from ..models.gated_rnn import GatedRNN
from .gated_rnn import ConstructionError, numerical_rank, query_key_value_layout, zero_rnn
from .linearised import random_inputs, relative_error


def compressed_neuron_count(r: int) -> dict:
    """``{"n": r(r+1)/2 + r, "m": r(r+1)/2}``, hidden and output-gating neurons for rank r."""
    if not isinstance(r, int) or isinstance(r, bool) or r < 1:
        raise ValueError(f"r must be a positive integer, got {r!r}")
    return {"n": r * (r + 1) // 2 + r, "m": r * (r + 1) // 2}


def fill_compressed_output(W: dict, A, C, P_V) -> list[int]:
    """Write the compressed recipe (A, C, P_V: the module's glossary) into the zeroed arrays
    ``W`` of ``gated_rnn.fill_query_key_value`` (torch, or sympy in ``symbolic``); return lam."""
    r, d = A.shape
    kv, index = query_key_value_layout(r, r, symmetric=True)
    n_kv = len(kv)
    lam = [0] * (n_kv + r)
    for k, (i, j) in enumerate(kv):  # key-value neuron: state M[i, j] = M[j, i], lam = 1
        W["W_in1"][k, :d] = A[i, :]
        W["W_in2"][k, :d] = A[j, :]
        lam[k] = 1
    for j in range(r):  # query neuron: the constant 1 times q[j], lam = 0
        W["W_in1"][n_kv + j, d] = 1
        W["W_in2"][n_kv + j, :d] = C[j, :]
    for k, (i, j) in enumerate(kv):  # one output neuron per key-value neuron
        W["W_out1"][k, k] = 1
        if i < j:  # M_ij (q_i + q_j): feeds outputs i and j
            W["W_out2"][k, n_kv + i] = 1
            W["W_out2"][k, n_kv + j] = 1
            W["D"][:, k] = P_V[:, i] + P_V[:, j]
        else:  # (M_ii - sum_{l != i} M_il) q_i: the diagonal's correction
            for other in range(r):
                if other != i:
                    W["W_out1"][k, index[(i, other)]] = -1
            W["W_out2"][k, n_kv + i] = 1
            W["D"][:, k] = P_V[:, i]
    return lam


def construct_compressed(attention: LinearSelfAttention) -> GatedRNN:
    """A ``GatedRNN`` with compressed output gating computing exactly ``attention`` (its dtype).

    Raises ConstructionError when W_V is zero or W_K^T W_Q reads directions W_V does not store.
    """
    if not isinstance(attention, LinearSelfAttention):
        raise TypeError(f"attention must be a LinearSelfAttention, got {type(attention).__name__}")
    with torch.no_grad():
        W_V, W_K, W_Q = (w.detach().clone() for w in (attention.W_V, attention.W_K, attention.W_Q))
        d = W_V.shape[1]
        r = numerical_rank(W_V)
        if r == 0:
            raise ConstructionError("W_V is zero: the layer outputs 0, nothing to build")
        U, S, Vh = torch.linalg.svd(W_V, full_matrices=False)
        P_V, R_V = U[:, :r] * S[:r], Vh[:r]  # W_V = P_V R_V, orthonormal rows R_V
        KQ = W_K.T @ W_Q  # (d, d)
        Q_sym = R_V @ KQ  # (r, d): KQ = R_V^T Q_sym when its columns lie in rowspace(W_V)
        residual = torch.linalg.matrix_norm(KQ - R_V.T @ Q_sym)
        scale = torch.linalg.matrix_norm(KQ)
        if residual > 1e-8 * scale:
            raise ConstructionError(
                f"W_K^T W_Q reads directions outside the row space of W_V (rank {r} of {d}; "
                f"relative residual {float(residual / scale):.2e}): the key-value matrix is not "
                "symmetric; use construct_rnn(attention, 'low_rank') or 'full' instead"
            )
        c = compressed_neuron_count(r)
        rnn = zero_rnn(d, c["n"], c["m"], P_V.shape[0], W_V.dtype)
        W = {k: getattr(rnn, k).data for k in ("W_in1", "W_in2", "W_out1", "W_out2", "D")}
        lam = fill_compressed_output(W, R_V, Q_sym, P_V)
        rnn.set_lam(torch.tensor(lam, dtype=torch.float64))
    return rnn


def compressed_errors(
    ds=range(1, 9), *, seeds=range(3), T: int = 32, batch: int = 16, rank=None
) -> dict[int, float]:
    """{d: max |RNN - attention| / max |attention| over seeds} in float64, per seed
    ``random_attention(d, seed=seed)`` (``rank=rank(d)`` and W_K = W_V when given) on ``batch``
    N(0, I) sequences of T steps."""
    errors = {}
    for d in ds:
        worst = 0.0
        for seed in seeds:
            layer = random_attention(d, seed=seed, rank=None if rank is None else rank(d))
            if rank is not None:
                layer = LinearSelfAttention(W_V=layer.W_V, W_K=layer.W_V, W_Q=layer.W_Q)
            rnn = construct_compressed(layer)
            x = random_inputs(d, B=batch, T=T, seed=10_000 + seed)
            with torch.no_grad():
                worst = max(worst, relative_error(rnn(x), layer(x)))
        errors[d] = worst
    return errors


def symmetric_product_matrix(d: int) -> torch.Tensor:
    """Coefficients of y = M q = Psi(q) m, M symmetric: (d * d, d(d+1)/2), float64; m the
    stored M[i, j], i <= j (``query_key_value_layout`` order), row k * d + i output i of Psi_k."""
    return product_matrix(d, d, symmetric=True)


def product_matrix(a: int, b: int, *, symmetric: bool = False) -> torch.Tensor:
    """As ``symmetric_product_matrix`` for an a x b matrix M, all a b entries stored unless
    ``symmetric``: (b * a, a b)."""
    kv, _ = query_key_value_layout(a, b, symmetric=symmetric)
    cols = []
    for i, j in kv:
        M = torch.zeros(a, b, dtype=torch.float64)
        M[i, j] = 1.0
        if symmetric:
            M[j, i] = 1.0
        cols.append(M.T.reshape(-1))  # the columns M e_1, ..., M e_b, stacked
    return torch.stack(cols, dim=1)


def column_rank(product_matrix: torch.Tensor) -> int:
    """The column rank of Psi(q), the rank of [Psi_1; ...; Psi_d]: a lower bound on the
    output-gating neurons of any exact y = Psi(q) m (the chapter's substitution argument)."""
    return int(torch.linalg.matrix_rank(product_matrix))
