"""One step of gradient descent on in-context linear regression, derived exactly (App. D.2;
the derivation: the chapter gradient_descent).

One GD step from W_0 = 0 on 1/2 sum_t ||y_t - W x_t||^2 (the task of Sec. 5.1, ``regression``)
predicts y^ = eta sum_t y_t x_t^T x_q = W (eta S) x_q. For inputs of unit variance and fourth
moment kappa, and W entries of variance sigma2 / d_x, its expected loss is

    L(eta) = sigma2 / (2 d_x) * (eta^2 E tr S^2 - 2 eta E tr S + d_x),
    E tr S = T d_x,   E tr S^2 = T d_x (d_x - 1 + kappa) + T (T - 1) d_x,

so eta* = 1 / (T + d_x - 2 + kappa) and L(eta*) = sigma2 / 2 * (1 - T eta*). Two independent
routes, checked against each other by the tests: ``gd_loss_formula`` and ``gd_loss_bruteforce``.

Glossary (code name -> symbol -> where):
    T, d_x, d_y   number of observations, input and output dimensions        Sec. 5.1
    kappa         E[x^4] of one input coordinate (9/5 for U(-sqrt 3, sqrt 3)) App. D.2
    sigma2        variance scale of W: entries have variance sigma2 / d_x    (1 train, 2 OOD)
    eta           learning rate of the GD step, eta* its optimum              App. D.2
    S             sum_t x_t x_t^T, the (unnormalised) input covariance
    GDTerms       the Table 2 coefficients and the residual norm of the other terms   Table 2
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
import sympy as sp

eta, T_, d_x_, kappa_, sigma2_ = sp.symbols("eta T d_x kappa sigma2", positive=True)


def uniform_moment(k: int, a: sp.Expr | None = None) -> sp.Expr:
    """E[x^k] for x ~ U(-a, a) (a = sqrt 3 by default: unit variance), by integration."""
    a = sp.sqrt(3) if a is None else sp.sympify(a)
    x = sp.Symbol("x", real=True)
    return sp.simplify(sp.integrate(x**k / (2 * a), (x, -a, a)))


def gaussian_moment(k: int, var: sp.Expr) -> sp.Expr:
    """E[w^k] for w ~ N(0, var): 0 for odd k, var^(k/2) (k - 1)!! for even k."""
    if k % 2:
        return sp.Integer(0)
    return sp.sympify(var) ** (k // 2) * sp.factorial2(k - 1)


def expectation(poly: sp.Expr, laws: dict[sp.Symbol, callable]) -> sp.Expr:
    """E[poly] for a polynomial in independent random variables: ``laws`` maps each random symbol
    to its moment function k -> E[s^k]; every other symbol is a constant."""
    gens = list(laws)
    p = sp.Poly(sp.expand(poly), *gens)
    total = sp.Integer(0)
    moment = functools.cache(lambda i, k: laws[gens[i]](k))  # E[gens[i]^k], each once
    for powers, coeff in p.terms():
        term = coeff
        for i, k in enumerate(powers):
            if k:
                term *= moment(i, k)
                if term == 0:
                    break
        total += term
    return sp.expand(total)


def gd_loss_formula(
    T: sp.Expr = T_, d_x: sp.Expr = d_x_, kappa: sp.Expr = kappa_, sigma2: sp.Expr = sigma2_
) -> sp.Expr:
    """L(eta) of one GD step from the second and fourth moments (module docstring), in sympy."""
    E_tr_S = T * d_x
    E_norm4 = d_x * kappa + d_x * (d_x - 1)  # E||x||^4: d_x diagonal and d_x(d_x-1) cross terms
    E_dot2 = d_x  # E(x^T x')^2 for independent x, x' of unit variance
    E_tr_S2 = T * E_norm4 + T * (T - 1) * E_dot2
    return sp.expand(sigma2 / (2 * d_x) * (eta**2 * E_tr_S2 - 2 * eta * E_tr_S + d_x))


def gd_loss_bruteforce(
    T: int,
    d_x: int,
    d_y: int,
    *,
    x_moment=uniform_moment,
    sigma2=1,
) -> sp.Expr:
    """L(eta) by expanding the loss 1/(2 d_y) ||y^ - W x_q||^2 in every x and W entry and taking
    its expectation monomial by monomial: no hand algebra. Too large a size is a ValueError."""
    for name, val in (("T", T), ("d_x", d_x), ("d_y", d_y)):
        if not isinstance(val, int) or val < 1:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")
    if T * d_x * d_x * d_y > 96:
        raise ValueError(
            f"T={T}, d_x={d_x}, d_y={d_y} is too large to expand (T d_x^2 d_y must be <= 96); "
            "use gd_loss_formula"
        )
    X = sp.Matrix(T, d_x, lambda t, i: sp.Symbol(f"x_{t}_{i}"))
    x_q = sp.Matrix(d_x, 1, lambda i, _: sp.Symbol(f"xq_{i}"))
    W = sp.Matrix(d_y, d_x, lambda k, i: sp.Symbol(f"w_{k}_{i}"))
    Y = X * W.T  # (T, d_y): row t is y_t^T
    y_hat = eta * Y.T * (X * x_q)  # (d_y, 1): eta sum_t y_t (x_t^T x_q)
    err = y_hat - W * x_q
    loss = sum(e**2 for e in err) / (2 * d_y)
    w_var = sp.sympify(sigma2) / d_x
    laws = {s: x_moment for s in itertools.chain(X, x_q)}
    laws.update({s: (lambda k: gaussian_moment(k, w_var)) for s in W})
    return expectation(loss, laws)


def optimal_eta(loss: sp.Expr) -> sp.Expr:
    """The minimiser of a quadratic L(eta) with positive leading coefficient."""
    (root,) = sp.solve(sp.diff(loss, eta), eta)
    return sp.simplify(root)


@dataclass(frozen=True)
class GDTheory:
    """The exact results for one setting: eta* and L(eta*) as sympy rationals, L as a function."""

    T: int
    d_x: int
    kappa: sp.Rational
    sigma2: sp.Rational
    loss: sp.Expr  # L(eta), a quadratic in the symbol eta
    eta_star: sp.Rational
    min_loss: sp.Rational

    def loss_at(self, value) -> sp.Expr:
        """L(eta) at a given learning rate (exact for rational input)."""
        return self.loss.subs(eta, sp.nsimplify(value))


def derive(T: int = 12, d_x: int = 3, *, sigma2=1, x_moment=uniform_moment) -> GDTheory:
    """eta* and the minimal loss of one GD step for T observations of dimension d_x."""
    kappa = x_moment(4)
    if x_moment(2) != 1:
        raise ValueError(f"the inputs must have unit variance, got E[x^2] = {x_moment(2)}")
    loss = gd_loss_formula(sp.Integer(T), sp.Integer(d_x), kappa, sp.sympify(sigma2))
    eta_star = optimal_eta(loss)
    return GDTheory(
        T=T,
        d_x=d_x,
        kappa=kappa,
        sigma2=sp.sympify(sigma2),
        loss=loss,
        eta_star=eta_star,
        min_loss=sp.simplify(loss.subs(eta, eta_star)),
    )


@dataclass(frozen=True)
class GDTerms:
    """Table 2: how close a network's input-output polynomial is to one GD step.

    coefs      (observations, d_x): the coefficient of x_t[i] y_t[k] x_q[i] for output k, per
               observation step t and input coordinate i (GD: eta* for every t and i)
    gd_norm    Euclidean norm of ``coefs``
    residual   Euclidean norm of every other coefficient of output k (all degrees 0-4), except
               monomials that contain y_q: the query's y entries are always 0, so their
               coefficients never act and cannot be learned
    """

    coefs: np.ndarray
    gd_norm: float
    residual: float

    @property
    def residual_ratio(self) -> float:
        """residual / gd_norm (0 for an exact GD step)."""
        return self.residual / self.gd_norm

    def rel_error(self, eta_star: float) -> np.ndarray:
        """(d_x,) |mean over t of coefs[:, i] - eta*| / eta*."""
        return np.abs(self.coefs.mean(axis=0) - eta_star) / eta_star


def gd_terms(poly, d_x: int, output: int = 0) -> GDTerms:
    """The Table 2 coefficients of output ``output`` of the query step's polynomial
    (``analysis.Polynomial``: T + 1 inputs of dimension d_x + d_y, the last one [x_q; 0])."""
    d, q = poly.d, poly.steps - 1
    if not 0 < d_x < d:
        raise ValueError(f"d_x must lie between 1 and d - 1 = {d - 1}, got {d_x}")
    if not 0 <= output < d - d_x:
        raise ValueError(f"output must lie in [0, d_y={d - d_x}), got {output}")
    coefs = np.zeros((q, d_x))
    is_gd = np.zeros(len(poly), dtype=bool)
    for t in range(q):
        for i in range(d_x):
            row = sorted([t * d + i, t * d + d_x + output, q * d + i]) + [poly.one]
            hit = np.flatnonzero((poly.monomials == np.array(row)).all(axis=1))
            if hit.size:
                coefs[t, i] = poly.coeffs[hit[0], output]
                is_gd[hit[0]] = True
    y_q_ids = q * d + np.arange(d_x, d)
    touches_y_q = np.isin(poly.monomials, y_q_ids).any(axis=1)
    rest = poly.coeffs[~is_gd & ~touches_y_q, output]
    return GDTerms(coefs, float(np.linalg.norm(coefs)), float(np.linalg.norm(rest)))
