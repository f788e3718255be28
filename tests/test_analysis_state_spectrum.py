"""The spectrum of a group's states, on planted truth: copies add neurons, not directions."""

import math

import pytest
import torch

from gated_attention import construct_rnn, random_attention
from gated_attention.analysis import (
    drop_after,
    gaussian_inputs,
    lam_groups,
    network,
    state_spectrum,
)


def construction_with_copies(copies: int):
    """The symmetric construction (d = 4) plus ``copies`` extra query neurons: scaled copies of
    query neuron 0 (same lam = 0, first input gate times 2 + i), read by nobody."""
    built = network(construct_rnn(random_attention(4, seed=0), "symmetric"))
    p = dict(built.params)
    q = lam_groups(built).zero[0]
    for i in range(copies):
        p["W_in1"] = torch.cat([p["W_in1"], (2.0 + i) * p["W_in1"][q : q + 1]])
        p["W_in2"] = torch.cat([p["W_in2"], p["W_in2"][q : q + 1]])
        p["nu"] = torch.cat([p["nu"], p["nu"][q : q + 1]])
        for k in ("W_out1", "W_out2"):
            p[k] = torch.cat([p[k], torch.zeros_like(p[k][:, :1])], dim=1)
    return network(p)


X = gaussian_inputs(4, 6, 64, seed=1)


def test_the_construction_has_no_weak_direction():
    rnn = network(construct_rnn(random_attention(4, seed=0), "symmetric"))
    g = lam_groups(rnn)
    kv, q = state_spectrum(rnn, X, g.one), state_spectrum(rnn, X, g.zero)
    assert kv.shape == (10,) and q.shape == (4,)
    assert float(q[0]) == pytest.approx(1.0) and bool((q[:-1] >= q[1:]).all())
    assert float(kv.min()) > 1e-4 and float(q.min()) > 1e-4
    assert drop_after(q, 4) is None  # no neuron beyond the construction's


def test_copies_add_neurons_but_not_directions():
    rnn = construction_with_copies(2)
    q = state_spectrum(rnn, X, lam_groups(rnn).zero)
    assert q.shape == (6,)
    assert float(q[4]) < 1e-12 and drop_after(q, 4) > 1e9


def test_a_neuron_that_is_no_copy_is_a_direction():
    rnn = construction_with_copies(1)
    q = state_spectrum(rnn, X, lam_groups(rnn).zero)
    assert drop_after(q, 3) < 1e3  # the 4th query direction is a real one
    assert state_spectrum(rnn, X, []).numel() == 0
    assert drop_after(torch.tensor([1.0, 0.0]), 1) == math.inf
    with pytest.raises(ValueError, match="count"):
        drop_after(q, 0)
    with pytest.raises(ValueError, match="out of range"):
        state_spectrum(rnn, X, [99])
