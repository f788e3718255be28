"""The per-seed criterion "learned the construction" and its transition (analysis/success)."""

import math

import numpy as np
import pytest
import torch

from gated_attention import construct_rnn, random_attention
from gated_attention.analysis import gaussian_inputs, network
from gated_attention.analysis.success import (
    LEARNED_LOSS,
    LEARNED_SCORE,
    kv_score_unpruned,
    learned,
    transition_by_fraction,
    wilson_interval,
)
from gated_attention.models.gated_rnn import GatedRNN


def test_wilson_interval_known_values():
    # 0 of 5: the interval reaches from 0 to 0.434 (the standard Wilson value)
    lo, hi = wilson_interval(0, 5)
    assert lo == 0.0 and math.isclose(hi, 0.4345, abs_tol=1e-4)
    lo, hi = wilson_interval(5, 5)
    assert math.isclose(lo, 0.5655, abs_tol=1e-4) and hi == 1.0
    lo, hi = wilson_interval(3, 10)
    assert math.isclose(lo, 0.1078, abs_tol=1e-4) and math.isclose(hi, 0.6032, abs_tol=1e-4)
    with pytest.raises(ValueError, match="k <= n"):
        wilson_interval(6, 5)


def test_learned_needs_both_the_loss_and_the_score():
    assert learned(LEARNED_LOSS, LEARNED_SCORE)
    assert not learned(2 * LEARNED_LOSS, 0.0)
    assert not learned(0.0, 2 * LEARNED_SCORE)
    assert not learned(0.0, 0.0, score_q=2 * LEARNED_SCORE)
    assert not learned(0.0, float("nan"))


def test_transition_needs_half_the_seeds_from_there_on():
    sizes = [8, 14, 20, 28]
    success = np.array([[1, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1]], dtype=bool)
    f = transition_by_fraction(sizes, success)
    # 8 has 2 of 3 but 14 has 1 of 3: n* is 20, not the lucky small size
    assert f.estimate == 20 and f.k == (2, 1, 2, 2) and f.R == 3
    assert transition_by_fraction(sizes, np.zeros((4, 3), bool)).estimate is None
    # exactly half counts (2 of 4)
    assert transition_by_fraction([4], np.array([[1, 1, 0, 0]], bool)).estimate == 4
    with pytest.raises(ValueError, match="increase"):
        transition_by_fraction([8, 8], np.ones((2, 3), bool))


def test_kv_score_of_the_construction_and_of_a_random_net():
    teacher = random_attention(3, seed=1, dtype=torch.float64)
    x = gaussian_inputs(3, 6, 64, seed=2)
    built = network(construct_rnn(teacher, "symmetric"))
    assert kv_score_unpruned(built, teacher, x) < 1e-12
    rnd = network(GatedRNN(3, 12, 12, seed=0, dtype=torch.float64))
    assert kv_score_unpruned(rnd, teacher, x) > 0.1
