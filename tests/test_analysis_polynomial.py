"""Exact input-output polynomials: against sympy expansion, against the forward pass, and the
distance (0 for the construction, > 0 for a perturbed one)."""

import numpy as np
import pytest
import sympy
import torch

from gated_attention import GatedRNN, construct_rnn, random_attention
from gated_attention.analysis import (
    attention_polynomial,
    gaussian_inputs,
    network,
    polynomial_distance,
    rnn_polynomial,
)
from gated_attention.models.gated_rnn import lam_from_nu


def _sympy_rnn_output(rnn, steps):
    """y_{steps-1} of the reference recurrence, expanded by sympy; symbols x[s][i]."""
    d = rnn.d
    x = [[sympy.Symbol(f"x_{s}_{i}") for i in range(d)] for s in range(steps)]
    p = {k: v.detach().double().numpy() for k, v in rnn.params().items()}
    lam = lam_from_nu(rnn.nu.detach().double()).numpy()
    h = [sympy.Integer(0)] * rnn.n
    for s in range(steps):
        xt = x[s] + [sympy.Integer(1)]
        for k in range(rnn.n):
            a = sum(sympy.Float(p["W_in1"][k, j]) * xt[j] for j in range(d + 1))
            b = sum(sympy.Float(p["W_in2"][k, j]) * xt[j] for j in range(d + 1))
            h[k] = sympy.Float(lam[k]) * h[k] + a * b
    ys = []
    for o in range(rnn.d_out):
        y = 0
        for m in range(rnn.m):
            a = sum(sympy.Float(p["W_out1"][m, k]) * h[k] for k in range(rnn.n))
            b = sum(sympy.Float(p["W_out2"][m, k]) * h[k] for k in range(rnn.n))
            y += sympy.Float(p["D"][o, m]) * a * b
        ys.append(sympy.Poly(sympy.expand(y), *[v for row in x for v in row]))
    return ys, x


def test_rnn_polynomial_equals_sympy_expansion():
    steps, d = 2, 2
    rnn = GatedRNN(d, 3, 2, seed=3, dtype=torch.float64, lam_range=(0.2, 0.9))
    poly = rnn_polynomial(network(rnn), steps)
    ys, x = _sympy_rnn_output(rnn, steps)
    for o, y in enumerate(ys):
        expected = {}
        for powers, c in y.terms():
            mono = []
            for v, e in enumerate(powers):
                mono += [divmod(v, d)] * e
            expected[tuple(sorted(mono))] = float(c)
        ours = poly.terms(o)
        assert set(ours) >= {k for k, c in expected.items() if abs(c) > 1e-12}
        for k in set(ours) | set(expected):
            assert ours.get(k, 0.0) == pytest.approx(expected.get(k, 0.0), abs=1e-10), k


def test_attention_polynomial_equals_sympy_expansion():
    att = random_attention(2, seed=1)
    steps, d = 3, 2
    poly = attention_polynomial(att, steps)
    x = sympy.Matrix([[sympy.Symbol(f"x_{s}_{i}") for i in range(d)] for s in range(steps)])
    W = {k: sympy.Matrix(getattr(att, k).detach().numpy()) for k in ("W_V", "W_K", "W_Q")}
    q = W["W_Q"] * x[steps - 1, :].T
    y = sum(
        ((W["W_V"] * x[s, :].T) * (W["W_K"] * x[s, :].T).T * q for s in range(steps)),
        sympy.zeros(d, 1),
    )
    for o in range(d):
        P = sympy.Poly(sympy.expand(y[o]), *list(x))
        for powers, c in P.terms():
            mono = []
            for v, e in enumerate(powers):
                mono += [divmod(v, d)] * e
            assert poly.coefficient(mono, o) == pytest.approx(float(c), abs=1e-12)
        assert len(poly.terms(o, atol=1e-12)) == len(P.terms())


@pytest.mark.parametrize("side", [False, True])
def test_polynomial_evaluates_to_the_forward_pass(side):
    d, steps = 3, 5
    rnn = GatedRNN(d, 7, 6, seed=0, side=side, dtype=torch.float64, lam_range=(0.5, 1.0))
    x = gaussian_inputs(d, steps, 16, seed=2)
    poly = rnn_polynomial(network(rnn), steps)
    with torch.no_grad():
        y = rnn(x)[:, -1]
    assert torch.allclose(poly.evaluate(x), y, atol=1e-10)
    assert poly.degrees.max() == (3 if side else 4)


def test_every_monomial_touches_at_most_two_steps():
    poly = rnn_polynomial(network(GatedRNN(2, 4, 3, seed=1, dtype=torch.float64)), 4)
    for k in range(len(poly)):
        assert len({s for s, _ in poly.monomial(k)}) <= 2


def test_construction_has_distance_zero_and_perturbation_does_not():
    att = random_attention(4, seed=5)
    A = attention_polynomial(att, 8)
    for variant in ("full", "symmetric", "side"):
        assert (
            polynomial_distance(rnn_polynomial(network(construct_rnn(att, variant)), 8), A) < 1e-12
        )
    rnn = construct_rnn(att, "symmetric")
    with torch.no_grad():
        rnn.W_out1[0, 0] += 0.05
    assert polynomial_distance(rnn_polynomial(network(rnn), 8), A) > 1e-3


def test_distance_is_scale_invariant_and_symmetric():
    att = random_attention(3, seed=0)
    rnn = GatedRNN(3, 5, 5, seed=0, dtype=torch.float64)
    P, A = rnn_polynomial(network(rnn), 4), attention_polynomial(att, 4)
    with torch.no_grad():
        rnn.D.mul_(3.0)
    assert polynomial_distance(rnn_polynomial(network(rnn), 4), A) == pytest.approx(
        polynomial_distance(P, A)
    )
    assert polynomial_distance(P, A) == pytest.approx(polynomial_distance(A, P))
    assert 0 < polynomial_distance(P, A) <= 2


def test_table2_size_is_fast_enough_and_shaped():
    rnn = GatedRNN(6, 80, 80, seed=0, dtype=torch.float64)
    poly = rnn_polynomial(network(rnn), 13)
    assert poly.d == 6 and poly.steps == 13 and poly.d_out == 6
    assert np.all(poly.degrees <= 4)


def test_bad_inputs_raise():
    att = random_attention(3, seed=0)
    with pytest.raises(ValueError, match="steps"):
        attention_polynomial(att, 0)
    with pytest.raises(TypeError, match=r"analysis\.network"):
        rnn_polynomial("rnn", 3)
    with pytest.raises(ValueError, match="differ"):
        polynomial_distance(attention_polynomial(att, 3), attention_polynomial(att, 4))
    with pytest.raises(ValueError, match="outside"):
        attention_polynomial(att, 3).coefficient([(5, 0)])
