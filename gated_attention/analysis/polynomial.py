"""Input-output polynomials of the gated RNN and of the attention teacher (Sec. 4.1, Table 1/2).

The output of Eq. (2) at step t is a polynomial in the inputs x_0 .. x_t whose coefficients
follow EXACTLY from the weights (no fitting; App. C.1). With x~_s = [x_s; 1] and t = steps - 1:

    h_t[n] = sum_{s<=t} lam_n^(t-s) (W_in1[n] . x~_s)(W_in2[n] . x~_s)
           = sum_s x~_s^T P_n(s) x~_s,                 P_n(s) = lam_n^(t-s) W_in1[n] W_in2[n]^T
    y_t[o] = sum_m D[o, m] (W_out1[m] . h_t)(W_out2[m] . h_t)
           = sum_{s, s'} sum_{abce} C[o, s, a, b, s', c, e] x~_s[a] x~_s[b] x~_s'[c] x~_s'[e]
    C[o, s, a, b, s', c, e] = sum_m D[o, m] A[m, s, a, b] B[m, s', c, e],
    A[m, s] = sum_n W_out1[m, n] P_n(s),   B[m, s'] = sum_n W_out2[m, n] P_n(s').

So y_t has degree <= 4 and every monomial touches at most two time steps; the teacher of Eq. (1)
has degree 3. Variable x[s, i]: entry i of the input at step s.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from ..models.attention import LinearSelfAttention
from .boundary import Network, require

Monomial = tuple[tuple[int, int], ...]  # ((s, i), ...), sorted: x[s0, i0] * x[s1, i1] * ...


@dataclasses.dataclass(frozen=True, eq=False)
class Polynomial:
    """Coefficients of y_t (t = steps - 1) as a polynomial in the variables x[s, i]: ``coeffs``
    (K, d_out) float64 of ``monomials`` (K, 4) int64, each row the sorted variable ids (x[s, i]:
    s * d + i) of one monomial, padded with the id ``steps * d`` of the constant 1."""

    d: int
    steps: int
    monomials: np.ndarray
    coeffs: np.ndarray

    @property
    def one(self) -> int:
        """The id that stands for the factor 1."""
        return self.steps * self.d

    @property
    def d_out(self) -> int:
        return self.coeffs.shape[1]

    @property
    def degrees(self) -> np.ndarray:
        """(K,) the degree of each monomial."""
        return (self.monomials != self.one).sum(axis=1)

    def __len__(self) -> int:
        return self.monomials.shape[0]

    def monomial(self, k: int) -> Monomial:
        """Row k as ((s, i), ...)."""
        return tuple(divmod(int(v), self.d) for v in self.monomials[k] if v != self.one)

    def terms(self, output: int = 0, *, atol: float = 0.0) -> dict[Monomial, float]:
        """{monomial: coefficient} of one output, keeping |coefficient| > atol."""
        self._check_output(output)
        c = self.coeffs[:, output]
        return {self.monomial(k): float(c[k]) for k in np.flatnonzero(np.abs(c) > atol)}

    def coefficient(self, monomial, output: int = 0) -> float:
        """The coefficient of a monomial given as an iterable of (s, i) (0 if absent)."""
        self._check_output(output)
        ids = []
        for s, i in monomial:
            if not (0 <= s < self.steps and 0 <= i < self.d):
                raise ValueError(f"variable x[{s}, {i}] is outside steps={self.steps}, d={self.d}")
            ids.append(s * self.d + i)
        if len(ids) > 4:
            return 0.0
        row = np.array(sorted(ids) + [self.one] * (4 - len(ids)))
        hit = np.flatnonzero((self.monomials == row).all(axis=1))
        return float(self.coeffs[hit[0], output]) if hit.size else 0.0

    def evaluate(self, x: torch.Tensor) -> torch.Tensor:
        """The polynomial at inputs x (B, steps, d) -> (B, d_out), float64."""
        x = torch.as_tensor(x, dtype=torch.float64)
        if x.dim() != 3 or tuple(x.shape[1:]) != (self.steps, self.d):
            raise ValueError(f"x must have shape (B, {self.steps}, {self.d}), got {tuple(x.shape)}")
        z = torch.cat([x.reshape(x.shape[0], -1), torch.ones(x.shape[0], 1, dtype=x.dtype)], 1)
        mono = z[:, torch.as_tensor(self.monomials)].prod(dim=-1)  # (B, K)
        return mono @ torch.as_tensor(self.coeffs)

    def _check_output(self, output: int) -> None:
        if not 0 <= output < self.d_out:
            raise ValueError(f"output must be in [0, {self.d_out}), got {output}")


def _collect(C: np.ndarray, ids: np.ndarray, d: int, steps: int) -> Polynomial:
    """Sum the entries of C (d_out, N) whose factor ids (N, 4) name the same monomial."""
    base = steps * d + 1
    ids = np.sort(ids, axis=1)
    key = ((ids[:, 0] * base + ids[:, 1]) * base + ids[:, 2]) * base + ids[:, 3]
    uniq, inverse = np.unique(key, return_inverse=True)
    coeffs = np.stack([np.bincount(inverse, weights=c, minlength=uniq.size) for c in C], axis=1)
    monomials = np.stack(
        [uniq // base**3, uniq // base**2 % base, uniq // base % base, uniq % base], axis=1
    )
    return Polynomial(d, steps, monomials.astype(np.int64), coeffs)


def _factor_ids(d: int, steps: int) -> np.ndarray:
    """(steps, d + 1) ids of the entries of x~_s: x[s, a] -> s * d + a, the constant -> one."""
    ids = np.arange(steps)[:, None] * d + np.arange(d + 1)[None, :]
    ids[:, d] = steps * d
    return ids


def _collect_cubic(C: torch.Tensor, f: np.ndarray, d: int, steps: int) -> Polynomial:
    """``_collect`` of C (d_out, T, k, k, k) over the factors f[s, a] f[s, b] f[t, c] of f (T, k),
    t the last step: degree 3, each id row padded with the constant's."""
    ids = np.broadcast_arrays(f[:, :, None, None], f[:, None, :, None], f[-1][None, None, None, :])
    ids = np.stack([a.ravel() for a in ids] + [np.full(ids[0].size, steps * d)], axis=1)
    return _collect(C.reshape(C.shape[0], -1).numpy(), ids, d, steps)


def _check_steps(steps: int) -> None:
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")


def rnn_polynomial(net: Network, steps: int) -> Polynomial:
    """The exact coefficients of y_t (t = steps - 1) of a gated RNN (Eq. 2), output or side gating.

    Memory O(d_out steps^2 (d+1)^4) for output gating (2.4M entries for d = 6, 13 steps)."""
    require(net, "rnn_polynomial")
    _check_steps(steps)
    W1, W2 = net.W_in1, net.W_in2  # (n, d+1)
    d = net.d
    lam = net.lam  # (n,)
    decay = lam[None, :] ** torch.arange(steps - 1, -1, -1, dtype=lam.dtype)[:, None]  # (T, n)
    f = _factor_ids(d, steps)
    if net.side:  # y = D ((W_side x~_t) * h_t): degree 3
        C = torch.einsum("on,sn,na,nb,nc->osabc", net.D, decay, W1, W2, net.W_side)
        return _collect_cubic(C, f, d, steps)
    P = torch.einsum("sn,na,nb->snab", decay, W1, W2)  # (T, n, d+1, d+1)
    A = torch.einsum("mn,snab->msab", net.W_out1, P)  # (m, T, d+1, d+1)
    B = torch.einsum("mn,snab->msab", net.W_out2, P)
    C = torch.einsum("om,msab,mtce->osabtce", net.D, A, B)  # (d_out, T, d+1, d+1, T, d+1, d+1)
    ids = np.broadcast_arrays(
        f[:, :, None, None, None, None],
        f[:, None, :, None, None, None],
        f[None, None, None, :, :, None],
        f[None, None, None, :, None, :],
    )
    ids = np.stack([a.ravel() for a in ids], axis=1)
    return _collect(C.reshape(C.shape[0], -1).numpy(), ids, d, steps)


def attention_polynomial(attention: LinearSelfAttention, steps: int) -> Polynomial:
    """The coefficients of the teacher's y_t (t = steps - 1), Eq. (1): degree 3.

    y_t[o] = sum_{s<=t} sum_{a,b,c} W_V[o, a] G[b, c] x[s, a] x[s, b] x[t, c], G = W_K^T W_Q."""
    _check_steps(steps)
    if not isinstance(attention, LinearSelfAttention):
        raise TypeError(f"attention must be a LinearSelfAttention, got {type(attention).__name__}")
    W_V = attention.W_V.detach().to(torch.float64)
    G = (attention.W_K.T @ attention.W_Q).detach().to(torch.float64)
    d = attention.d
    C = torch.einsum("oa,bc->oabc", W_V, G)[:, None].expand(-1, steps, -1, -1, -1)  # (o,s,a,b,c)
    return _collect_cubic(C, _factor_ids(d, steps)[:, :d], d, steps)  # x[s, a] x[s, b] x[t, c]


def polynomial_distance(p: Polynomial, q: Polynomial) -> float:
    """The polynomial distance of Table 1: mean over outputs o of || p_o/|p_o| - q_o/|q_o| ||.

    p_o, q_o: coefficient vectors over the union of both polynomials' monomials. In [0, 2], 0
    exactly when they agree up to a positive factor per output; a zero output is a ValueError."""
    for name, r in (("p", p), ("q", q)):
        if not isinstance(r, Polynomial):
            raise TypeError(f"{name} must be a Polynomial, got {type(r).__name__}")
    if (p.d, p.steps, p.d_out) != (q.d, q.steps, q.d_out):
        raise ValueError(
            f"polynomials differ in (d, steps, d_out): {(p.d, p.steps, p.d_out)} vs "
            f"{(q.d, q.steps, q.d_out)}"
        )
    Cp = np.concatenate([p.coeffs, np.zeros((len(p), q.d_out))], axis=1)
    Cq = np.concatenate([np.zeros((len(q), p.d_out)), q.coeffs], axis=1)
    both = _collect(
        np.concatenate([Cp, Cq]).T, np.concatenate([p.monomials, q.monomials]), p.d, p.steps
    ).coeffs  # (K, 2 d_out) over the union of monomials: p's columns, then q's
    P, Q = both[:, : p.d_out], both[:, p.d_out :]
    nP, nQ = np.linalg.norm(P, axis=0), np.linalg.norm(Q, axis=0)
    if np.any(nP == 0) or np.any(nQ == 0):
        raise ValueError("an output of one polynomial is identically zero; distance undefined")
    return float(np.mean(np.linalg.norm(P / nP - Q / nQ, axis=0)))
