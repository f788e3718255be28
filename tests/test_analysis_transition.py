"""The transition-point estimator of Fig. 3 on planted losses, and the chapters' configs."""

import dataclasses

import numpy as np
import pytest
import torch

from gated_attention import experiments
from gated_attention.analysis import normalised_losses, transition_point
from gated_attention.experiments import (
    PANELS,
    how_many_neurons_config,
    teacher_identification_config,
)
from gated_attention.experiments.teacher_identification import QUICK_T


def planted(sizes, step_at, R=5, seed=0, noise=0.3):
    """Losses ~1 below ``step_at`` and ~1e-4 from it on, with log-normal seed noise."""
    rng = np.random.default_rng(seed)
    base = np.where(np.asarray(sizes) >= step_at, 1e-4, 1.0)[:, None]
    return base * 10 ** (noise * rng.standard_normal((len(sizes), R)))


def test_transition_finds_the_planted_step():
    sizes = [8, 12, 16, 20, 24, 28, 32, 40]
    tr = transition_point(sizes, planted(sizes, 28), threshold=1e-2, n_boot=200)
    assert tr.estimate == 28
    assert tr.lo == 28 and tr.hi == 28 and tr.no_transition_fraction == 0


def test_transition_needs_every_larger_size_below():
    sizes = [8, 16, 24, 32]
    L = planted(sizes, 24, noise=0.0)
    L[0] = 1e-5  # a lucky small network alone does not make the transition
    assert transition_point(sizes, L, n_boot=10).estimate == 24
    L[-1] = 1.0  # the largest network fails: no transition
    tr = transition_point(sizes, L, n_boot=10)
    assert tr.estimate is None and tr.lo is None and tr.no_transition_fraction == 1


def test_bootstrap_widens_with_disagreeing_seeds():
    sizes = [10, 20, 30, 40]
    L = planted(sizes, 30, R=4, noise=0.0)
    L[1, :2] = 1e-5  # at n = 20 half the seeds succeed
    tr = transition_point(sizes, L, n_boot=500, seed=1)
    assert tr.lo <= 20 < 30 <= tr.hi
    assert tr == transition_point(sizes, L, n_boot=500, seed=1)  # same seed, same numbers


def test_transition_bad_inputs():
    with pytest.raises(ValueError, match="shape"):
        transition_point([1, 2], np.ones((3, 2)))
    with pytest.raises(ValueError, match="increase"):
        transition_point([2, 1], np.ones((2, 2)))
    with pytest.raises(ValueError, match="positive"):
        transition_point([1, 2], np.zeros((2, 2)))


def test_configs_per_profile():
    for profile in experiments.PROFILES:
        c = teacher_identification_config(profile)
        assert c.d == 4 and c.teacher_std == 0.2
        assert c.T == (32 if profile != "quick" else QUICK_T)  # the paper's T but in quick
        for p in "AB":
            h = how_many_neurons_config(profile, p)
            assert h.d == PANELS[p]["d"] and h.teacher_rank == PANELS[p]["rank"]
            k = 2 * PANELS[p]["construction"]
            if profile != "smoke":
                assert min(h.sizes) < k < max(h.sizes) and len(h.seeds) >= 3
    paper = teacher_identification_config("paper")
    assert paper.train.steps == 1_000_000 and (paper.n, paper.m, paper.T) == (100, 100, 32)
    assert how_many_neurons_config("paper", "B").T == 32
    assert len(how_many_neurons_config("paper", "A").seeds) >= 5
    with pytest.raises(ValueError, match="panel"):
        how_many_neurons_config("quick", "C")
    with pytest.raises(ValueError, match="profile"):
        teacher_identification_config("fast")


def test_normalised_losses_divides_by_the_teacher_variance():
    c = dataclasses.replace(how_many_neurons_config("smoke", "A"), eval_batch=64)
    E = len(c.members())
    sizes, L = normalised_losses(c, torch.ones(E))
    assert sizes.tolist() == list(c.sizes) and L.shape == (len(c.sizes), len(c.seeds))
    # the reciprocal of each seed's teacher variance, the same for every size
    assert np.allclose(L, L[:1]) and np.all(L > 0)
    with pytest.raises(ValueError, match="eval_loss"):
        normalised_losses(c, torch.ones(E + 1))
