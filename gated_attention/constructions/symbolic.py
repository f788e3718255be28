"""Symbolic proofs (sympy) that the constructions of App. A compute Eq. (1).

Eq. (1) and Eq. (2) run on sympy symbols, the RNN's weights written by the recipes
``constructions.gated_rnn`` uses for torch tensors: the expanded difference RNN - attention is
the zero polynomial exactly when the construction is right for *every* weight and input sequence
of that length (book/construction.md, "A proof, and a symbolic check").

Glossary (code name -> paper symbol -> section):
    W_V, W_K, W_Q     value, key, query matrices; entries V_{ij}, K_{ij}, Q_{ij}  Eq. 1
    xs                the inputs x_1 .. x_T, each a (d, 1) column of symbols x_{t,i}          Eq. 1
    ys                y_t = sum_{t'<=t} (W_V x_t')(W_K x_t')^T (W_Q x_t), each (d_v, 1)      Eq. 1
    weights           W_in1, W_in2 (n, d+1), lam (n, 1), W_out1, W_out2 (m, n), D (d_out, m)
                      or W_side (n, d+1), D (d_out, n) (side gating)                        Eq. 2
    h                 h_t = lam * h_{t-1} + (W_in1 x~_t) * (W_in2 x~_t), x~_t = [x_t; 1]      Eq. 2
    W_Qp, delta       W_Q' = W_V^{-T} W_K^T W_Q = delta adj(W_V^T) W_K^T W_Q, delta = 1/det W_V  A.3
    P_V, R_V          W_V = P_V R_V, rank r_V; entries PV_{ij}, RV_{ij}                       A.4
    P_KQ, R_KQ        W_K^T W_Q = P_KQ R_KQ, rank r_KQ; entries PKQ_{ij}, RKQ_{ij}            A.4

Symmetric variant: with the fresh symbol delta the difference is sum_k c_k delta^k; it vanishes
at delta = 1/det(W_V) exactly when sum_k c_k det(W_V)^(K-k) (K the top power of delta) is the
zero polynomial, which is what is expanded: no ``simplify`` anywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import sympy as sp
import torch

from ..models.attention import random_attention
from .compressed_output import fill_compressed_output
from .gated_rnn import (
    check_variant,
    construct_rnn,
    fill_query_key_value,
    fill_side,
    low_rank_rows,
    query_key_value_layout,
)
from .linearised import random_inputs
from .polynomial_ring import eq1, eq2, lift, lift_vec, lower, ring_of


def symbol_matrix(name: str, rows: int, cols: int) -> sp.Matrix:
    """A (rows, cols) sympy Matrix of distinct symbols ``name_{ij}`` (1-based indices)."""
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{{{i + 1}{j + 1}}}"))


def symbol_inputs(d: int, T: int) -> list[sp.Matrix]:
    """x_1 .. x_T as (d, 1) columns of symbols x_{t,i}."""
    _check_sizes(d, T)
    return [sp.Matrix([sp.Symbol(f"x_{{{t + 1},{i + 1}}}") for i in range(d)]) for t in range(T)]


@dataclasses.dataclass(frozen=True)
class SymbolicAttention:
    """A symbolic attention layer and its outputs y_1 .. y_T on symbolic inputs x_1 .. x_T."""

    W_V: sp.Matrix  # (d_v, d)
    W_K: sp.Matrix  # (d_k, d)
    W_Q: sp.Matrix  # (d_k, d)
    xs: list  # T columns (d, 1)
    ys: list  # T columns (d_v, 1), expanded polynomials


def attention_outputs(W_V, W_K, W_Q, xs: list) -> list[sp.Matrix]:
    """Eq. (1) on sympy matrices: y_t = sum_{t'<=t} (W_V x_t')(W_K x_t')^T (W_Q x_t), expanded."""
    R = ring_of(W_V, W_K, W_Q, *xs)
    ys = eq1(*(lift(R, M) for M in (W_V, W_K, W_Q)), [lift_vec(R, x) for x in xs])
    return [lower(y) for y in ys]


def symbolic_attention(d: int, T: int) -> SymbolicAttention:
    """Eq. (1) with fully symbolic d x d weights W_V, W_K, W_Q and inputs x_1 .. x_T."""
    xs = symbol_inputs(d, T)  # checks d and T
    W_V, W_K, W_Q = (symbol_matrix(s, d, d) for s in ("V", "K", "Q"))
    return SymbolicAttention(W_V, W_K, W_Q, xs, attention_outputs(W_V, W_K, W_Q, xs))


def symbolic_weights(variant: str, **matrices) -> dict[str, sp.Matrix]:
    """The constructed RNN's weights (module glossary) as sympy matrices, written by the
    recipe of ``constructions.gated_rnn``, from the keyword matrices: "full", "side": W_V, W_K,
    W_Q; "symmetric": W_V and W_Qp; "low_rank": P_V, R_V, P_KQ, R_KQ."""
    check_variant(variant)
    if variant == "side":
        W_V, W_K, W_Q = matrices["W_V"], matrices["W_K"], matrices["W_Q"]
        (d_v, d), d_k = W_V.shape, W_K.shape[0]
        n = d_v * d_k
        W = {k: sp.zeros(n, d + 1) for k in ("W_in1", "W_in2", "W_side")}
        W["D"] = sp.zeros(d_v, n)
        lam = fill_side(W, W_V, W_K, W_Q)
        return {**W, "lam": sp.Matrix(lam)}
    if variant == "full":
        A, B, C = matrices["W_V"], matrices["W_K"], matrices["W_Q"]
        P_V = sp.eye(A.shape[0])
    elif variant == "symmetric":  # keys = values, W_Q' = W_V^{-T} W_K^T W_Q (App. A.3)
        A = B = matrices["W_V"]
        C, P_V = matrices["W_Qp"], sp.eye(A.shape[0])
    else:
        A, B, C, P_V = low_rank_rows(
            matrices["P_V"], matrices["R_V"], matrices["P_KQ"], matrices["R_KQ"]
        )
    (a, d), b = A.shape, B.shape[0]
    kv, index = query_key_value_layout(a, b, symmetric=variant == "symmetric")
    n, m = len(kv) + b, a * b
    W = {"W_in1": sp.zeros(n, d + 1), "W_in2": sp.zeros(n, d + 1)}
    W.update(W_out1=sp.zeros(m, n), W_out2=sp.zeros(m, n), D=sp.zeros(P_V.shape[0], m))
    lam = fill_query_key_value(W, A, B, C, P_V, kv, index)
    return {**W, "lam": sp.Matrix(lam)}


def symbolic_rnn(weights: dict[str, sp.Matrix], xs: list) -> list[sp.Matrix]:
    """Eq. (2) on sympy matrices (the reference loop over t; side gating when ``weights`` has
    W_side, App. A.2), outputs expanded."""
    R = ring_of(*weights.values(), *xs)
    ys = eq2({k: lift(R, M) for k, M in weights.items()}, [lift_vec(R, x) for x in xs])
    return [lower(y) for y in ys]


def count_terms(expr) -> int:
    """Number of monomials of an expanded polynomial (0 for the zero polynomial)."""
    expr = sp.expand(expr)
    return 0 if expr == 0 else len(sp.Add.make_args(expr))


@dataclasses.dataclass(frozen=True)
class SymbolicProof:
    """RNN - attention for one variant, expanded: ``differences[t][i]`` is output i at step t+1.

    For "symmetric" each difference is multiplied by the needed power of det(W_V) (module
    docstring), so it is a polynomial too.
    """

    variant: str
    d: int
    T: int
    ranks: tuple | None  # (r_V, r_KQ) for "low_rank"
    weights: dict  # the symbolic RNN weights (sympy matrices)
    differences: list  # T lists of d_v expanded sympy expressions

    @property
    def nonzero_terms(self) -> int:
        """Monomials left in all differences together: 0 iff the construction is exact."""
        return sum(count_terms(e) for row in self.differences for e in row)

    @property
    def is_zero(self) -> bool:
        """True iff every difference is the zero polynomial."""
        return all(e == 0 for row in self.differences for e in row)


def symbolic_construction(
    variant: str,
    d: int,
    T: int = 3,
    *,
    r_V: int | None = None,
    r_KQ: int | None = None,
    perturb: Callable[[dict], None] | None = None,
) -> SymbolicProof:
    """Prove (or refute) that ``variant``'s constructed RNN equals Eq. (1), symbolically.

    d = 2 or 3 runs in seconds; the cost grows quickly with d and T. ``r_V``, ``r_KQ``: the
    ranks for "low_rank" (default max(1, d - 1) each). ``perturb``: called with the symbolic
    weights (mutable sympy matrices) before the RNN runs, to check that a broken construction
    is caught. Raises ValueError for a size or rank out of range.
    """
    check_variant(variant)
    _check_sizes(d, T)
    ranks, scale = None, None
    if variant == "low_rank":
        r_V = max(1, d - 1) if r_V is None else r_V
        r_KQ = max(1, d - 1) if r_KQ is None else r_KQ
        for name, r in (("r_V", r_V), ("r_KQ", r_KQ)):
            if not isinstance(r, int) or not 1 <= r <= d:
                raise ValueError(f"{name} must be an integer between 1 and d={d}, got {r!r}")
        ranks = (r_V, r_KQ)
        P_V, R_V = symbol_matrix("PV", d, r_V), symbol_matrix("RV", r_V, d)
        P_KQ, R_KQ = symbol_matrix("PKQ", d, r_KQ), symbol_matrix("RKQ", r_KQ, d)
        # Eq. (1) depends on W_K, W_Q only through W_K^T W_Q = P_KQ R_KQ: take W_K = P_KQ^T.
        W_V, W_K, W_Q = P_V * R_V, P_KQ.T, R_KQ
        weights = symbolic_weights(variant, P_V=P_V, R_V=R_V, P_KQ=P_KQ, R_KQ=R_KQ)
    else:
        W_V, W_K, W_Q = (symbol_matrix(s, d, d) for s in ("V", "K", "Q"))
        if variant == "symmetric":
            W_Qp, scale = _symmetric_query(W_V, W_K, W_Q)
            weights = symbolic_weights(variant, W_V=W_V, W_Qp=W_Qp)
        else:
            weights = symbolic_weights(variant, W_V=W_V, W_K=W_K, W_Q=W_Q)
    return _proof(variant, d, T, (W_V, W_K, W_Q), weights, ranks, scale, perturb)


def _proof(variant, d, T, layer, weights, ranks, scale, perturb) -> SymbolicProof:
    """``symbolic_construction``'s proof, ``scale`` (delta, det W_V) or None (no delta)."""
    xs = symbol_inputs(d, T)
    if perturb is not None:
        perturb(weights)
    extra = [sp.Matrix([scale[0]])] if scale is not None else []  # delta, even if perturbed away
    R = ring_of(*layer, *weights.values(), *xs, *extra)
    xs_R = [lift_vec(R, x) for x in xs]
    y_att = eq1(*(lift(R, M) for M in layer), xs_R)
    y_rnn = eq2({k: lift(R, M) for k, M in weights.items()}, xs_R)
    differences = []
    for ya, yr in zip(y_att, y_rnn, strict=True):
        diff = [r - a for r, a in zip(yr, ya, strict=True)]
        if scale is not None:
            delta, det = scale
            diff = [_clear_delta(e, R(delta), R(det)) for e in diff]
        differences.append([e.as_expr() for e in diff])
    return SymbolicProof(variant, d, T, ranks, weights, differences)


def _symmetric_query(W_V, W_K, W_Q):
    """W_Q' = delta adj(W_V^T) W_K^T W_Q and (delta, det W_V), delta standing for 1 / det W_V."""
    delta = sp.Symbol("delta")
    return delta * W_V.T.adjugate() * W_K.T * W_Q, (delta, W_V.det(method="berkowitz"))


def _clear_delta(p, delta, det):
    """sum_k c_k delta^k  ->  sum_k c_k det^(K-k): zero iff p vanishes at delta = 1/det."""
    K = p.degree(delta)
    if K <= 0:
        return p
    return sum((p.coeff_wrt(delta, k) * det ** (K - k) for k in range(K + 1)), p.ring.zero)


def numeric_errors(
    variant: str, ds=range(1, 9), *, seeds=range(3), T: int = 32, batch: int = 16
) -> dict[int, float]:
    """Float64 twin of the proof: {d: max |RNN - attention|} over seeds, each
    ``random_attention(d, seed=seed)`` (of rank max(1, d // 2) for "low_rank") on ``batch``
    N(0, I) sequences of T steps."""
    check_variant(variant)
    errors = {}
    for d in ds:
        worst = 0.0
        for seed in seeds:
            rank = max(1, d // 2) if variant == "low_rank" else None
            layer = random_attention(d, seed=seed, rank=rank)
            rnn = construct_rnn(layer, variant)
            x = random_inputs(d, B=batch, T=T, seed=10_000 + seed)
            with torch.no_grad():
                worst = max(worst, (rnn(x) - layer(x)).abs().max().item())
        errors[d] = worst
    return errors


def symbolic_compressed(
    d: int, T: int = 3, *, perturb: Callable[[dict], None] | None = None
) -> SymbolicProof:
    """Prove (or refute) the compressed output gating in sympy: the weights of
    ``fill_compressed_output`` (A = W_V, C = W_Q' as for "symmetric", P_V = I); ``perturb`` as
    in ``symbolic_construction``. Returns a ``SymbolicProof`` with variant "compressed"."""
    _check_sizes(d, T)
    W_V, W_K, W_Q = (symbol_matrix(s, d, d) for s in ("V", "K", "Q"))
    W_Qp, scale = _symmetric_query(W_V, W_K, W_Q)
    n_kv = d * (d + 1) // 2
    W = {"W_in1": sp.zeros(n_kv + d, d + 1), "W_in2": sp.zeros(n_kv + d, d + 1)}
    W["W_out1"], W["W_out2"] = sp.zeros(n_kv, n_kv + d), sp.zeros(n_kv, n_kv + d)
    W["D"] = sp.zeros(d, n_kv)
    lam = fill_compressed_output(W, W_V, W_Qp, sp.eye(d))
    weights = {**W, "lam": sp.Matrix(lam)}
    return _proof("compressed", d, T, (W_V, W_K, W_Q), weights, None, scale, perturb)


def _check_sizes(d: int, T: int) -> None:
    for name, val in (("d", d), ("T", T)):
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")
