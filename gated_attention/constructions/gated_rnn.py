"""Gated RNN weights that implement a given linear self-attention layer exactly (App. A).

Variants (``construct_rnn(attention, variant)``; n hidden, m output-gating neurons):
    "full"       App. A.1, Fig. 1: a key-value neuron per M[i, j] (lam = 1), a query neuron per
                 q[k] (lam = 0): n = d_v d_k + d_k, m = d_v d_k
    "symmetric"  App. A.3: W_K <- W_V, W_Q <- W_V^{-T} W_K^T W_Q (W_V invertible) make M
                 symmetric, its upper triangle stored: n = d(d+1)/2 + d, m = d^2
    "low_rank"   App. A.4: W_V = P_V R_V, W_K^T W_Q = P_KQ R_KQ (ranks r_V, r_KQ),
                 y = P_V [sum (R_V x)(P_KQ^T x)^T] (R_KQ x_t): n = r_KQ (r_V + 1), m = r_V r_KQ
    "side"       App. A.2: the query from a side gate, y = D ((W_side x~) * h): n = d_v d_k
Each output equals ``attention(x)`` up to rounding (1e-10 in float64, tests/test_construction.py).
"""

from __future__ import annotations

import numbers

import torch

from ..models.attention import LinearSelfAttention, check_finite
from ..models.gated_rnn import GatedRNN

VARIANTS = ("full", "symmetric", "low_rank", "side")


class ConstructionError(ValueError):
    """A construction's assumption does not hold for the given attention layer."""


def numerical_rank(W: torch.Tensor, rtol: float = 1e-10) -> int:
    """Number of singular values above ``rtol`` times the largest one (in float64)."""
    return int(torch.linalg.matrix_rank(W.detach().to(torch.float64), rtol=rtol))


def neuron_count(variant: str, d: int, r_V: int | None = None, r_KQ: int | None = None) -> dict:
    """``{"n": n, "m": m}``, the hidden and output-gating neurons of a variant for a d -> d layer
    (side: m = 0). ``r_V``, ``r_KQ``: ranks of W_V and W_K^T W_Q ("low_rank"; default d).

    Raises ValueError unless d is a positive integer and the ranks integers in [1, d].
    """
    check_variant(variant)
    _check_size("d", d)
    for name, r in (("r_V", r_V), ("r_KQ", r_KQ)):
        if r is not None:
            _check_size(name, r)
            if r > d:
                raise ValueError(f"{name} (a rank of a d x d matrix) must be <= d={d}, got {r}")
    if variant == "full":
        return {"n": d * d + d, "m": d * d}
    if variant == "symmetric":
        return {"n": d * (d + 1) // 2 + d, "m": d * d}
    if variant == "low_rank":
        r_V = d if r_V is None else r_V
        r_KQ = d if r_KQ is None else r_KQ
        return {"n": r_KQ * (r_V + 1), "m": r_V * r_KQ}
    return {"n": d * d, "m": 0}


def parameter_count(variant: str, d: int, r_V: int | None = None, r_KQ: int | None = None) -> int:
    """Dense parameter count of the gated RNN a variant needs (d_out = d): O(d^4) for the full
    construction, O(d^3) with side gating."""
    c = neuron_count(variant, d, r_V, r_KQ)
    n, m = c["n"], c["m"]
    if variant == "side":
        return 3 * n * (d + 1) + n + d * n
    return 2 * n * (d + 1) + n + 2 * m * n + d * m


def attention_parameter_count(d: int) -> int:
    """W_V, W_K, W_Q: 3 d^2 parameters."""
    _check_size("d", d)
    return 3 * d * d


def _check_size(name: str, val: object) -> None:
    """A size (d, a rank) must be a positive integer; a ValueError names it and the value."""
    if isinstance(val, bool) or not isinstance(val, numbers.Integral) or val < 1:
        raise ValueError(f"{name} must be a positive integer, got {val!r}")


def check_variant(variant: str) -> None:
    """A ValueError unless ``variant`` is one of VARIANTS."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")


def construct_rnn(
    attention: LinearSelfAttention, variant: str = "full", *, rtol: float = 1e-10
) -> GatedRNN:
    """A ``GatedRNN`` computing exactly the function of ``attention`` (App. A.1-A.4), in its
    dtype (float64 for exactness checks). ``rtol``: the relative singular-value threshold for
    the ranks ("low_rank") and W_V's invertibility ("symmetric").

    Raises:
        ConstructionError: "symmetric" with a non-square or singular W_V; "low_rank" for a layer
            that is identically zero.
        ValueError: NaN or inf in W_V, W_K or W_Q (named).
    """
    check_variant(variant)
    if not isinstance(attention, LinearSelfAttention):
        raise TypeError(f"attention must be a LinearSelfAttention, got {type(attention).__name__}")
    with torch.no_grad():
        W_V, W_K, W_Q = (w.detach().clone() for w in (attention.W_V, attention.W_K, attention.W_Q))
        for name, w in (("W_V", W_V), ("W_K", W_K), ("W_Q", W_Q)):
            check_finite(w, name, "the weights of the layer to construct")
        if variant == "full":
            return _query_key_value_rnn(W_V, W_K, W_Q)
        if variant == "symmetric":
            return _symmetric(W_V, W_K, W_Q, rtol)
        if variant == "low_rank":
            return _low_rank(W_V, W_K, W_Q, rtol)
        return _side(W_V, W_K, W_Q)


def zero_rnn(
    d: int, n: int, m: int, d_out: int, dtype: torch.dtype, side: bool = False
) -> GatedRNN:
    """A ``GatedRNN`` with every weight 0, for a recipe to write into."""
    rnn = GatedRNN(d, n, m, d_out, side=side, dtype=dtype)
    for p in rnn.parameters():
        p.data.zero_()
    return rnn


def query_key_value_layout(a: int, b: int, *, symmetric: bool = False) -> tuple[list, dict]:
    """``(kv, index)``: hidden neuron k stores M[kv[k]] of the a x b key-value matrix, ``index``
    maps every (i, j) to its neuron (App. A.1); ``symmetric`` (a == b, App. A.3): only i <= j,
    (i, j) and (j, i) sharing a neuron."""
    if symmetric:
        if a != b:
            raise ValueError(f"a symmetric key-value matrix must be square, got {a} x {b}")
        kv = [(i, j) for i in range(a) for j in range(i, b)]
        index = {(i, j): k for k, (i, j) in enumerate(kv)}
        index.update({(j, i): k for (i, j), k in list(index.items())})
    else:
        kv = [(i, j) for i in range(a) for j in range(b)]
        index = {ij: k for k, ij in enumerate(kv)}
    return kv, index


def fill_query_key_value(W: dict, A, B, C, P_V, kv: list, index: dict) -> list[int]:
    """Write the recipe of App. A.1 into the zeroed arrays ``W``; return lam (a list of 0 / 1).

    The recipe for y = P_V sum_t' (A x_t')(B x_t')^T (C x_t), with A (a, d) value-like rows,
    B (b, d) key-like rows, C (b, d) query rows and P_V (d_out, a) the readout:
        key-value neuron k = (i, j):  W_in1[k] = [A[i], 0], W_in2[k] = [B[j], 0], lam = 1
        query neuron j:               W_in1 = [0, 1] (the constant), W_in2 = [C[j], 0], lam = 0
        output neuron o = (i, j):     W_out1 -> M[i, j], W_out2 -> q[j], D[:, o] = P_V[:, i]
    ``W`` maps W_in1 (n, d+1), W_in2 (n, d+1), W_out1 (m, n), W_out2 (m, n), D (d_out, m) to
    arrays that accept ``W[r, c] = 1``, ``W[r, :d] = row`` and ``W[:, c] = column``: torch
    tensors here, sympy matrices in ``symbolic.py`` (the same recipe proves itself there).
    """
    a, d = A.shape
    b = B.shape[0]
    n_kv = len(kv)
    lam = [0] * (n_kv + b)
    for k, (i, j) in enumerate(kv):  # key-value neuron: state M[i, j], lam = 1
        W["W_in1"][k, :d] = A[i, :]
        W["W_in2"][k, :d] = B[j, :]
        lam[k] = 1
    for j in range(b):  # query neuron: reads the constant 1 and q[j], lam = 0
        W["W_in1"][n_kv + j, d] = 1
        W["W_in2"][n_kv + j, :d] = C[j, :]
    for o, (i, j) in enumerate((i, j) for i in range(a) for j in range(b)):
        W["W_out1"][o, index[(i, j)]] = 1  # selects M[i, j]
        W["W_out2"][o, n_kv + j] = 1  # selects q[j]
        W["D"][:, o] = P_V[:, i]  # y += P_V[:, i] * M[i, j] q[j]
    return lam


def fill_side(W: dict, W_V, W_K, W_Q) -> list[int]:
    """Write the side-gating recipe of App. A.2 into the zeroed arrays ``W`` (W_in1, W_in2,
    W_side (n, d+1), D (d_v, n); torch or sympy); return lam."""
    d_v, d = W_V.shape
    d_k = W_K.shape[0]
    for k, (i, j) in enumerate((i, j) for i in range(d_v) for j in range(d_k)):
        W["W_in1"][k, :d] = W_V[i, :]  # state M[i, j], lam = 1
        W["W_in2"][k, :d] = W_K[j, :]
        W["W_side"][k, :d] = W_Q[j, :]  # side gate q[j]
        W["D"][i, k] = 1
    return [1] * (d_v * d_k)


def low_rank_rows(P_V, R_V, P_KQ, R_KQ) -> tuple:
    """App. A.4: the (A, B, C, P_V) of ``fill_query_key_value`` for W_V = P_V R_V and
    W_K^T W_Q = P_KQ R_KQ; P_V (d, r_V), R_V (r_V, d), P_KQ (d, r_KQ), R_KQ (r_KQ, d)."""
    return R_V, P_KQ.T, R_KQ, P_V


def _query_key_value_rnn(A, B, C, P_V=None, *, symmetric: bool = False) -> GatedRNN:
    """y = P_V sum_t' (A x_t')(B x_t')^T (C x_t) (``fill_query_key_value``; P_V None: I)."""
    a, d = A.shape
    b = B.shape[0]
    P_V = torch.eye(a, dtype=A.dtype) if P_V is None else P_V
    kv, index = query_key_value_layout(a, b, symmetric=symmetric)
    rnn = zero_rnn(d, len(kv) + b, a * b, P_V.shape[0], A.dtype)
    W = {name: getattr(rnn, name).data for name in ("W_in1", "W_in2", "W_out1", "W_out2", "D")}
    lam = fill_query_key_value(W, A, B, C, P_V, kv, index)
    rnn.set_lam(torch.tensor(lam, dtype=torch.float64))
    return rnn


def _symmetric(W_V, W_K, W_Q, rtol) -> GatedRNN:
    d_v, d = W_V.shape
    if d_v != d:
        raise ConstructionError(
            f"the symmetric construction needs a square, invertible W_V; got shape {(d_v, d)}"
        )
    r = numerical_rank(W_V, rtol)
    if r < d:
        raise ConstructionError(
            f"the symmetric construction needs an invertible W_V, but W_V (d={d}) has numerical "
            f"rank {r} (rtol={rtol}); use variant='low_rank' or 'full' instead"
        )
    # W_K' = W_V, W_Q' = W_V^{-T} W_K^T W_Q leaves W_V^T ... W_K^T W_Q unchanged (App. A.3).
    W_Q_sym = torch.linalg.solve(W_V.T, W_K.T @ W_Q)
    return _query_key_value_rnn(W_V, W_V, W_Q_sym, symmetric=True)


def _low_rank(W_V, W_K, W_Q, rtol) -> GatedRNN:
    r_V = numerical_rank(W_V, rtol)
    C = W_K.T @ W_Q  # (d, d): y = W_V sum x x^T C x_t
    r_KQ = numerical_rank(C, rtol)
    if r_V == 0 or r_KQ == 0:
        raise ConstructionError(
            f"the attention layer is identically zero (rank W_V = {r_V}, rank W_K^T W_Q = "
            f"{r_KQ}); there is nothing to construct"
        )
    U, S, Vh = torch.linalg.svd(W_V, full_matrices=False)
    P_V, R_V = U[:, :r_V] * S[:r_V], Vh[:r_V]  # W_V = P_V R_V
    U, S, Vh = torch.linalg.svd(C, full_matrices=False)
    P_KQ, R_KQ = U[:, :r_KQ] * S[:r_KQ], Vh[:r_KQ]  # C = P_KQ R_KQ
    return _query_key_value_rnn(*low_rank_rows(P_V, R_V, P_KQ, R_KQ))


def _side(W_V, W_K, W_Q) -> GatedRNN:
    d_v, d = W_V.shape
    rnn = zero_rnn(d, d_v * W_K.shape[0], 0, d_v, W_V.dtype, side=True)
    W = {name: getattr(rnn, name).data for name in ("W_in1", "W_in2", "W_side", "D")}
    lam = fill_side(W, W_V, W_K, W_Q)
    rnn.set_lam(torch.tensor(lam, dtype=torch.float64))
    return rnn
