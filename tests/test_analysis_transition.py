"""The normalised losses of Fig. 3A/B (what its loss edge reads), and the chapters' configs."""

import dataclasses

import numpy as np
import pytest
import torch

from gated_attention.experiments import (
    PANELS,
    how_many_neurons_config,
    teacher_identification_config,
)
from gated_attention.readings.sweep_losses import normalised_losses


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
