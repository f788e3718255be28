"""Merging output-gating neurons (App. C.2) and reordering (Fig. 2B) on planted truth."""

import pytest
import torch

from gated_attention import construct_rnn, random_attention
from gated_attention.analysis import (
    gaussian_inputs,
    merge,
    merge_error,
    network,
    output_change,
    reorder,
)


def split_construction(seed=0):
    """The symmetric construction with output neuron 0 split into three that merge back.

    (a.h)(b.h) = ((a+b).h)^2/4 - ((a-b).h)^2/4 (two neurons with rank-1 symmetric kernels), the
    second split once more into 0.7 and 0.3 of its readout. None of the three alone has the
    construction's pattern (one row on key-value neurons, the other on query neurons).
    """
    att = random_attention(4, seed=seed)
    rnn = network(construct_rnn(att, "symmetric"))
    p = rnn.params
    a, b, D0 = p["W_out1"][0], p["W_out2"][0], p["D"][:, 0]
    W1 = torch.stack([(a + b) / 2, (a - b) / 2, (a - b) / 2])
    W2 = torch.stack([(a + b) / 2, -(a - b) / 2, -(a - b) / 2])
    D = torch.stack([D0, 0.7 * D0, 0.3 * D0], dim=1)
    q = dict(p)
    q["W_out1"] = torch.cat([p["W_out1"][1:], W1])
    q["W_out2"] = torch.cat([p["W_out2"][1:], W2])
    q["D"] = torch.cat([p["D"][:, 1:], D], dim=1)
    return att, rnn, network(q)


def test_merge_finds_the_planted_group_and_keeps_the_function():
    att, rnn, q = split_construction()
    x = gaussian_inputs(4, 12, 32, seed=1)
    assert output_change(rnn, q, x) < 1e-10  # the split network is the same function
    assert merge_error(q, [15, 16, 17]) < 1e-12
    assert merge_error(q, [0, 15]) > 1e-2  # a construction neuron does not join the group
    mg = merge(q, rtol=1e-8)
    assert mg.groups == [[15, 16, 17]]
    assert mg.net.m == 16
    assert output_change(q, mg.net, x) < 1e-10


def test_construction_has_nothing_to_merge():
    rnn = network(construct_rnn(random_attention(4, seed=3), "symmetric"))
    assert merge(rnn, rtol=1e-6).groups == []
    # two construction neurons of the same output row read different queries: not one product
    assert merge_error(rnn, [0, 1]) > 0.1


def test_reorder_keeps_the_function_and_shows_the_blocks():
    att, _, q = split_construction(1)
    g = torch.Generator().manual_seed(0)
    ph, po = torch.randperm(14, generator=g), torch.randperm(18, generator=g)
    q = q.params
    s = dict(q)
    for k in ("W_in1", "W_in2", "nu"):
        s[k] = q[k][ph]
    s["W_out1"], s["W_out2"] = q["W_out2"][po][:, ph], q["W_out1"][po][:, ph]  # swapped rows too
    s["D"] = q["D"][:, po]
    s = network(s)
    x = gaussian_inputs(4, 12, 16, seed=2)
    r = reorder(s)
    assert output_change(s, r.net, x) < 1e-10
    assert (r.n_one, r.n_zero) == (10, 4)
    lam = torch.exp(-torch.exp(r.net.nu))
    assert torch.all(lam[:10] > 0.99) and torch.all(lam[10:] < 0.01)
    merged = merge(r.net, rtol=1e-8)
    m = reorder(merged.net).net.params
    # the construction's blocks: W_out1 reads only key-value neurons, W_out2 only query neurons
    assert m["W_out1"][:, 10:].abs().max() < 1e-10
    assert m["W_out2"][:, :10].abs().max() < 1e-10
    # query neurons read the constant through W_in1, scaled to 1
    assert torch.allclose(m["W_in1"][10:, 4], torch.ones(4, dtype=torch.float64))


def test_bad_inputs_raise():
    rnn = network(construct_rnn(random_attention(3, seed=0), "side"))
    with pytest.raises(ValueError, match="side gating"):
        merge(rnn)
    _, _, q = split_construction()
    with pytest.raises(ValueError, match="out of range"):
        merge_error(q, [99])
    with pytest.raises(ValueError, match="max_group"):
        merge(q, max_group=1)
    big = network(q.rnn())
    big = network(
        {
            **big.params,
            "W_out1": big.W_out1.repeat(3, 1),
            "W_out2": big.W_out2.repeat(3, 1),
            "D": big.D.repeat(1, 3),
        }
    )
    with pytest.raises(ValueError, match="prune first"):
        merge(big)
