"""The transition-point estimator of Fig. 3 on planted losses, and the chapters' configs."""

import dataclasses

import numpy as np
import pytest
import torch

from gated_attention.analysis import normalised_losses, transition_point
from gated_attention.experiments import (
    PANELS,
    how_many_neurons_config,
    teacher_identification_config,
)


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


def test_the_paper_profiles_are_the_papers_settings():
    """The paper profile uses the paper's numbers (Sec. 4.1-4.2): d 4, n = m = 100, T 32, batch
    64, 1,000,000 steps; the Fig. 3 sweeps bracket twice the construction's count, >= 5 seeds."""
    paper = teacher_identification_config("paper")
    assert (paper.d, paper.n, paper.m, paper.T) == (4, 100, 100, 32)
    assert (paper.train.batch_size, paper.train.steps) == (64, 1_000_000)
    for p in "AB":
        h = how_many_neurons_config("paper", p)
        assert (h.d, h.teacher_rank, h.T) == (PANELS[p]["d"], PANELS[p]["rank"], 32)
        assert min(h.sizes) < 2 * PANELS[p]["construction"] < max(h.sizes)
        assert len(h.seeds) >= 5 and h.train.steps == 1_000_000


def test_configs_reject_unknown_panel_and_profile():
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
