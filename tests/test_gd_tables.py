"""The rows of "RNNs learn gradient descent" (readings/gd_rows.py) and the Monte Carlo check of
"One step of gradient descent" (readings/gd_step.py)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from gated_attention.readings import gd_rows, gd_step

ETA = 5 / 74


def analysis(**kw):
    """A stand-in for gd_learned.RegressionAnalysis: two seeds of n = 80."""
    coefs = np.full((2, 12, 3), ETA)
    coefs[1, -1, 0] = 2 * ETA  # seed 1 weighs its last step double on i = 1
    a = SimpleNamespace(
        n_top=80,
        top=np.array([4, 5]),
        top_seeds=np.array([0, 1]),
        gd_mean=0.1,
        top_rnn_mean=np.array([0.101, 0.102]),
        top_gap=np.array([0.001, 0.002]),
        top_gap_se=np.array([0.0001, 0.0002]),
        raw_mean=0.1015,
        gap=0.0015,
        gap_se=0.0001,
        rnn_loss=7 / 74 + 0.0015,
        coefs=coefs,
        per_seed_coefs=coefs.mean(axis=1),
        residual_ratios=np.array([0.01, 0.03]),
        coef_rel_error=0.5,
        memory_lam=np.array([0.99, 0.999, 0.95]),
    )
    vars(a).update(kw)
    return a


def test_the_gap_rows_pair_each_seed_with_its_share_of_gd():
    first, second = gd_rows.seed_gaps(analysis())
    assert (first.n, first.seed) == (80, 0)
    assert (first.rnn, first.gap, first.gap_se) == pytest.approx((0.101, 0.001, 0.0001))
    assert first.gap_pct == pytest.approx(1.0) and second.gap_pct == pytest.approx(2.0)


def test_table2_reads_mean_std_and_spread_per_coordinate():
    first, second, third = gd_rows.table2_rows(analysis(), ETA)
    assert [r.i for r in (first, second, third)] == [1, 2, 3] and first.gd == ETA
    # x_t[1] y_t[1] x_q[1]: seed 1 is higher by eta* / 12
    mean, std = (ETA + ETA * 13 / 12) / 2, np.std([ETA, ETA * 13 / 12], ddof=1)
    assert first.mean == pytest.approx(mean) and first.std == pytest.approx(std)
    assert first.spread > 1e-3 and second.spread == pytest.approx(0.0, abs=1e-12)  # i = 2: none
    res = gd_rows.residual(analysis())
    assert (res.mean, res.std) == pytest.approx((0.02, np.std([0.01, 0.03], ddof=1)))


def test_one_network_has_no_spread_over_seeds():
    a = analysis(top=np.array([4]), residual_ratios=np.array([0.01]))
    a.per_seed_coefs = a.per_seed_coefs[:1]
    assert all(r.std == 0.0 for r in gd_rows.table2_rows(a, ETA))
    assert gd_rows.residual(a).std == 0.0


def test_memory_counts_neurons_per_network_and_the_coefficients_range():
    m = gd_rows.memory(analysis(), ETA)
    assert m.per_network == pytest.approx(1.5) and m.median_lam == pytest.approx(0.99)
    assert (m.lo, m.hi) == pytest.approx((1.0, 2.0))


def test_the_transition_counts_seeds_per_size():
    f = SimpleNamespace(sizes=(8, 16), k=(1, 4), R=4, estimate=12)
    rows = gd_rows.transition_rows(f)
    assert [(r.n, r.k, r.R) for r in rows] == [(8, 1, 4), (16, 4, 4)]


def test_the_monte_carlo_check_reads_eta_star_last_and_the_worst_rate():
    exact = torch.tensor([0.2, 0.1, 0.1], dtype=torch.float64)
    mean = torch.tensor([0.23, 0.1, 0.102], dtype=torch.float64)
    se = torch.tensor([0.01, 0.01, 0.001], dtype=torch.float64)
    c = gd_step.monte_carlo_check(mean, se, exact)
    assert (c.mean, c.se, c.exact) == pytest.approx((0.102, 0.001, 0.1))
    assert c.z == pytest.approx(2.0) and c.worst == pytest.approx(3.0) and c.rates == 3
