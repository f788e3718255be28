"""lam groups and Score KV / Score Q on planted truth."""

import pytest
import torch

from gated_attention import GatedRNN, construct_rnn, random_attention
from gated_attention.analysis import (
    gaussian_inputs,
    lam_groups,
    network,
    reconstruction_score,
    score_kv,
    score_q,
)


def test_lam_groups_planted():
    lam = torch.tensor([1.0, 0.995, 0.5, 0.0, 0.009, 0.99, 0.011], dtype=torch.float64)
    g = lam_groups(lam, tol=0.01)
    assert g.one == [0, 1] and g.zero == [3, 4] and g.between == [2, 5, 6]
    assert g.counts() == {"one": 2, "zero": 2, "between": 3}


def test_lam_groups_of_the_construction():
    g = lam_groups(network(construct_rnn(random_attention(4, seed=0), "symmetric")))
    assert g.counts() == {"one": 10, "zero": 4, "between": 0}
    assert g.one == list(range(10))


@pytest.mark.parametrize("variant", ["full", "symmetric"])
def test_scores_are_zero_for_the_construction(variant):
    att = random_attention(4, seed=2)
    rnn = network(construct_rnn(att, variant))
    g = lam_groups(rnn)
    x = gaussian_inputs(4, 16, 64, seed=0)
    assert score_kv(rnn, att, x, g.one) < 1e-12
    assert score_q(rnn, att, x, g.zero) < 1e-12


def test_scores_detect_missing_or_wrong_neurons():
    att = random_attention(4, seed=2)
    rnn = network(construct_rnn(att, "symmetric"))
    x = gaussian_inputs(4, 16, 64, seed=0)
    assert score_kv(rnn, att, x, list(range(9))) > 1e-3  # one key-value entry missing
    assert score_q(rnn, att, x, [10, 11, 12]) > 1e-3  # one query coordinate missing
    assert score_kv(rnn, att, x, []) == pytest.approx(1.0)
    random_rnn = network(GatedRNN(4, 14, 16, seed=0, dtype=torch.float64))
    assert score_q(random_rnn, att, x, range(14)) > 0.05


def test_reconstruction_score_planted_regression():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(500, 3, generator=g, dtype=torch.float64)
    W = torch.randn(3, 2, generator=g, dtype=torch.float64)
    assert reconstruction_score(X, X @ W + 5.0) < 1e-20  # linear with intercept: exact
    noise = torch.randn(500, 2, generator=g, dtype=torch.float64)
    Y = X @ W + noise
    r2 = 1 - ((noise - noise.mean(0)) ** 2).sum() / ((Y - Y.mean(0)) ** 2).sum()
    assert reconstruction_score(X, Y) == pytest.approx(1 - float(r2), rel=0.05)


def test_bad_inputs_raise():
    att = random_attention(3, seed=0)
    rnn = network(construct_rnn(att, "full"))
    x = gaussian_inputs(3, 4, 4, seed=0)
    with pytest.raises(ValueError, match="out of range"):
        score_q(rnn, att, x, [99])
    with pytest.raises(ValueError, match="same N"):
        reconstruction_score(torch.zeros(3, 2), torch.zeros(4, 2))
    with pytest.raises(ValueError, match="lam must lie"):
        lam_groups(torch.tensor([1.5]))
    with pytest.raises(ValueError, match="tol"):
        lam_groups(torch.tensor([0.5]), tol=0.7)
