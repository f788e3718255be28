"""Gated RNNs that solve associative recall exactly (App. D.3), one per algorithm: the planted
truths of the reverse engineering (book/associative_recall.md, "Three hand-built networks, three
costs"). N_k keys, N_v values; inputs x = [e_k; e_v], the query [e_k; 0]; M[v, k] = 1 if the
pair (k, v) was shown.

    attention_rnn(side=False)  App. A.1 for W_V = [0 I], W_K = W_Q = [I 0]: N_v N_k key-value
                               neurons (lam = 1), N_k query neurons, N_v N_k output-gating ones
    attention_rnn(side=True)   App. A.2: the same key-value neurons, read by a side gate
    compressed_side_rnn        side gating with (N - 1)^2 + 1 neurons (N_k = N_v = N, distinct
                               values): neuron (v, k) stores (e_v - e_N)(e_k - e_N)^T
    squared_difference_rnn     input-output gating, not attention: output neuron j computes
                               1 - ((h_j - h_cur) / delta)^2; N_v + 2 hidden, N_v output neurons

Glossary (code name -> meaning):
    code    c, the scalar code of each key, 1 + k / (N_k - 1): distinct, nonzero
    delta   the smallest gap between two codes; the output is 0 for a neighbouring code
"""

from __future__ import annotations

import torch

from ..models.attention import LinearSelfAttention
from ..models.gated_rnn import GatedRNN
from .gated_rnn import construct_rnn, zero_rnn

F64 = torch.float64


def naive_neurons(n_keys: int, n_values: int) -> int:
    """Key-value neurons of the attention construction: one per entry of M, N_k N_v."""
    return n_keys * n_values


def compressed_neurons(n: int) -> int:
    """Neurons of ``compressed_side_rnn`` for N_k = N_v = n: (n - 1)^2 + 1, the least any exact
    side-gating network needs (the argument: the chapter associative_recall.md)."""
    return (n - 1) ** 2 + 1


def recall_attention(n_keys: int, n_values: int) -> LinearSelfAttention:
    """The attention layer that recalls: values W_V = [0 I], keys and queries W_K = W_Q = [I 0]."""
    d = n_keys + n_values
    W_V = torch.zeros(n_values, d, dtype=F64)
    W_V[:, n_keys:] = torch.eye(n_values, dtype=F64)
    W_K = torch.zeros(n_keys, d, dtype=F64)
    W_K[:, :n_keys] = torch.eye(n_keys, dtype=F64)
    return LinearSelfAttention(W_V=W_V, W_K=W_K, W_Q=W_K.clone())


def attention_rnn(n_keys: int, n_values: int, *, side: bool = False) -> GatedRNN:
    """The construction of App. A.1 (output gating) or A.2 (``side``) for ``recall_attention``."""
    return construct_rnn(recall_attention(n_keys, n_values), "side" if side else "full")


def compressed_side_rnn(n: int) -> GatedRNN:
    """Side gating with (n - 1)^2 + 1 neurons for N_k = N_v = n and distinct values (exact).

    With A[o, v] = [o = v] - 1/n (v < n) and B_vk = (e_v - e_n)(e_k - e_n)^T, a permutation matrix
    Pi has Pi[o, kq] = 1/n + sum_{v,k<n} A[o, v] A[kq, k] <B_vk, Pi>: neuron (v, k) stores
    <B_vk, Pi>, its side gate reads A[kq, k], D[o, (v, k)] = A[o, v]; the last neuron adds 1/n.
    A ValueError unless n is an integer >= 2.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    d = 2 * n
    rnn = zero_rnn(d, compressed_neurons(n), 0, n, F64, side=True)
    A = torch.eye(n, dtype=F64)[:, : n - 1] - 1.0 / n  # (n, n - 1): A[o, v]
    with torch.no_grad():
        for i in range(rnn.n - 1):  # neuron (v, k)
            v, k = divmod(i, n - 1)
            rnn.W_in1[i, n + v], rnn.W_in1[i, n + n - 1] = 1.0, -1.0  # value part e_v - e_n
            rnn.W_in2[i, k], rnn.W_in2[i, n - 1] = 1.0, -1.0  # key part e_k - e_n
            rnn.W_side[i, :n] = A[:, k]  # the gate reads A[kq, k]
            rnn.D[:, i] = A[:, v]
        rnn.W_in1[-1, n:d] = 1.0  # the last neuron: every pair step adds 1 * 1, the query 0 * 1
        rnn.W_in2[-1, d] = 1.0
        rnn.W_side[-1, d] = 1.0 / n**2  # h = n at the query: adds 1/n to every output
        rnn.D[:, -1] = 1.0
    rnn.set_lam(torch.ones(rnn.n, dtype=F64))
    return rnn


def default_code(n_keys: int) -> torch.Tensor:
    """Distinct, nonzero key codes 1, 1 + 1/(N_k - 1), ..., 2."""
    return 1.0 + torch.arange(n_keys, dtype=F64) / (n_keys - 1)


def squared_difference_rnn(n_keys: int, n_values: int) -> GatedRNN:
    """Input-output gating that compares key codes (``default_code``); exact in argmax.

    Hidden neurons: j < N_v memory (value j times the key code, lam = 1), N_v the current key's
    code (lam = 0), N_v + 1 the count N_k (lam = 1). Output neuron j: (a_j + h_const / N_k) *
    (-a_j + h_const / N_k) = 1 - a_j^2.
    """
    code = default_code(n_keys)
    gaps = (code[:, None] - code[None, :]).abs()
    delta = float(gaps[~torch.eye(n_keys, dtype=torch.bool)].min())
    d, V = n_keys + n_values, n_values
    rnn = zero_rnn(d, V + 2, V, V, F64)
    cur, const = V, V + 1
    with torch.no_grad():
        for j in range(V):
            rnn.W_in1[j, n_keys + j] = 1.0
            rnn.W_in2[j, :n_keys] = code
            rnn.W_out1[j, j], rnn.W_out1[j, cur] = 1.0 / delta, -1.0 / delta
            rnn.W_out2[j, j], rnn.W_out2[j, cur] = -1.0 / delta, 1.0 / delta
            rnn.W_out1[j, const] = rnn.W_out2[j, const] = 1.0 / n_keys
            rnn.D[j, j] = 1.0
        rnn.W_in1[cur, d] = 1.0
        rnn.W_in2[cur, :n_keys] = code
        rnn.W_in1[const, n_keys:d] = 1.0
        rnn.W_in2[const, d] = 1.0
    lam = torch.ones(V + 2, dtype=F64)
    lam[cur] = 0.0
    rnn.set_lam(lam)
    return rnn
