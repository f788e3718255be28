"""The exact one-step GD results of App. D.2 (gated_attention.gd_theory)."""

import numpy as np
import pytest
import sympy as sp

from gated_attention.tasks import gd_theory
from gated_attention.tasks.gd_theory import eta


def test_paper_setting_gives_5_over_74_and_7_over_74():
    theory = gd_theory.derive(T=12, d_x=3)
    assert theory.kappa == sp.Rational(9, 5)
    assert theory.eta_star == sp.Rational(5, 74)
    assert theory.min_loss == sp.Rational(7, 74)
    assert isinstance(theory.eta_star, sp.Rational) and isinstance(theory.min_loss, sp.Rational)


def test_ood_setting_doubles_the_loss_and_keeps_eta():
    theory = gd_theory.derive(T=12, d_x=3, sigma2=2)
    assert theory.eta_star == sp.Rational(5, 74)
    assert theory.min_loss == sp.Rational(7, 37)


def test_general_eta_star_formula():
    T, d_x, kappa = gd_theory.T_, gd_theory.d_x_, gd_theory.kappa_
    eta_star = gd_theory.optimal_eta(gd_theory.gd_loss_formula())
    assert sp.simplify(eta_star - 1 / (T + d_x - 2 + kappa)) == 0


def test_moments():
    assert gd_theory.uniform_moment(2) == 1
    assert gd_theory.uniform_moment(4) == sp.Rational(9, 5)
    assert gd_theory.uniform_moment(3) == 0
    assert gd_theory.uniform_moment(2, a=1) == sp.Rational(1, 3)
    assert gd_theory.gaussian_moment(4, sp.Rational(1, 3)) == sp.Rational(3, 9)
    assert gd_theory.gaussian_moment(6, 2) == 15 * 8
    assert gd_theory.gaussian_moment(5, 2) == 0


def test_expectation_of_a_known_polynomial():
    a, b, c = sp.symbols("a b c")
    laws = {a: gd_theory.uniform_moment, b: lambda k: gd_theory.gaussian_moment(k, 2)}
    # E[(a + b)^2 c] = (E a^2 + E b^2) c for independent zero-mean a, b; c is a constant
    assert gd_theory.expectation((a + b) ** 2 * c, laws) == 3 * c


@pytest.mark.parametrize("T, d_x, d_y", [(1, 1, 1), (2, 2, 1), (3, 2, 2), (2, 3, 1)])
def test_bruteforce_expansion_equals_the_formula(T, d_x, d_y):
    brute = gd_theory.gd_loss_bruteforce(T, d_x, d_y)
    formula = gd_theory.gd_loss_formula(T, d_x, gd_theory.uniform_moment(4), 1)
    assert sp.simplify(brute - formula) == 0


def test_bruteforce_with_gaussian_inputs_and_doubled_variance():
    def normal(k):
        return gd_theory.gaussian_moment(k, 1)

    brute = gd_theory.gd_loss_bruteforce(2, 2, 1, x_moment=normal, sigma2=2)
    formula = gd_theory.gd_loss_formula(2, 2, 3, 2)
    assert sp.simplify(brute - formula) == 0
    # and a wrong fourth moment would not match: the test can fail
    assert sp.simplify(brute - gd_theory.gd_loss_formula(2, 2, sp.Rational(9, 5), 2)) != 0


def test_eta_star_minimises_the_loss():
    theory = gd_theory.derive()
    for delta in (sp.Rational(-1, 100), sp.Rational(1, 100)):
        assert theory.loss_at(theory.eta_star + delta) > theory.min_loss
    assert sp.diff(theory.loss, eta).subs(eta, theory.eta_star) == 0
    # L(0) = 1/2: predicting 0 loses half the (unit) variance of the target
    assert theory.loss_at(0) == sp.Rational(1, 2)


def test_bad_input_raises_clear_errors():
    with pytest.raises(ValueError, match="too large"):
        gd_theory.gd_loss_bruteforce(12, 3, 3)
    with pytest.raises(ValueError, match="d_x must be a positive integer"):
        gd_theory.gd_loss_bruteforce(2, 0, 1)
    with pytest.raises(ValueError, match="unit variance"):
        gd_theory.derive(x_moment=lambda k: gd_theory.uniform_moment(k, a=1))


def _gd_polynomial(rnn):
    from gated_attention.analysis import network, rnn_polynomial

    return rnn_polynomial(network(rnn), 13)


def test_gd_terms_of_the_constructed_gd_network():
    from gated_attention.tasks.regression import ETA_STAR, gd_rnn

    terms = gd_theory.gd_terms(_gd_polynomial(gd_rnn()), d_x=3)
    assert terms.coefs.shape == (12, 3)
    assert abs(terms.coefs - ETA_STAR).max() < 1e-12
    assert terms.residual < 1e-12 and terms.residual_ratio < 1e-10
    assert terms.rel_error(ETA_STAR).max() < 1e-10
    other = gd_theory.gd_terms(_gd_polynomial(gd_rnn()), d_x=3, output=1)
    assert abs(other.coefs - ETA_STAR).max() < 1e-12


def test_gd_terms_sees_forgetting_and_extra_terms():
    import torch

    from gated_attention.tasks.regression import ETA_STAR, gd_rnn

    rnn = gd_rnn()
    rnn.set_lam(torch.tensor([0.9] + [1.0] * 8 + [0.0] * 3))  # key-value neuron (y_0, x_0) forgets
    terms = gd_theory.gd_terms(_gd_polynomial(rnn), d_x=3)
    # observation t is read at the query step 12: decayed by lam^(12 - t)
    assert terms.coefs[:, 0] == pytest.approx(ETA_STAR * 0.9 ** (12 - np.arange(12)))
    assert abs(terms.coefs[:, 1:] - ETA_STAR).max() < 1e-12
    assert terms.residual < 1e-12  # still only GD monomials
    rnn = gd_rnn()
    with torch.no_grad():
        rnn.D[0, 3] = 0.01  # output 0 also reads output neuron (1, 0): y_t[2] x_t[1] x_q[1]
    terms = gd_theory.gd_terms(_gd_polynomial(rnn), d_x=3)
    assert abs(terms.coefs - ETA_STAR).max() < 1e-12
    assert terms.residual > 1e-3


def test_gd_terms_rejects_bad_arguments():
    from gated_attention.tasks.regression import gd_rnn

    poly = _gd_polynomial(gd_rnn())
    with pytest.raises(ValueError, match="d_x must lie"):
        gd_theory.gd_terms(poly, d_x=6)
    with pytest.raises(ValueError, match="output must lie"):
        gd_theory.gd_terms(poly, d_x=3, output=3)
