"""App. C.2's claim, tested on planted truth: the neuron a merged group becomes is the
construction's output neuron (``analysis.selector_share``), and a perturbed one is not."""

import dataclasses

import pytest

from gated_attention import random_attention
from gated_attention.analysis import (
    lam_groups,
    merge,
    merged_selector_shares,
    network,
    selector_share,
)
from gated_attention.constructions.gated_rnn import construct_rnn
from gated_attention.readings.teacher_merge import planted_merge_group


def test_the_constructions_output_neurons_have_share_one():
    net = network(construct_rnn(random_attention(3, seed=0), "symmetric"))
    g = lam_groups(net)
    assert all(selector_share(net, m, g.one, g.zero) == pytest.approx(1) for m in range(net.m))


def test_a_planted_group_merges_into_an_output_neuron_of_the_construction():
    net, group = planted_merge_group(random_attention(4, seed=0))
    merged = merge(net, rtol=1e-8)
    assert merged.groups == [group]
    g = lam_groups(net)
    (share,) = merged_selector_shares(merged, g.one, g.zero)
    assert share == pytest.approx(1, abs=1e-10)


def test_a_neuron_that_reads_a_query_neuron_on_both_sides_is_not():
    net = network(construct_rnn(random_attention(3, seed=0), "symmetric"))
    g = lam_groups(net)
    W1 = net.W_out1.clone()
    W1[0] = 0.0
    W1[0, g.zero[0]] = 1.0  # reads a query neuron where a key-value neuron belongs
    bad = dataclasses.replace(net, W_out1=W1)
    assert selector_share(bad, 0, g.one, g.zero) == pytest.approx(0)
    W1[0, g.one[0]] = 1.0  # half on each: a quarter of the kernel crosses the right blocks
    half = dataclasses.replace(net, W_out1=W1.clone())
    assert selector_share(half, 0, g.one, g.zero) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="out of range"):
        selector_share(net, net.m, g.one, g.zero)
