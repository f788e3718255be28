"""Consolidation of lam groups on planted truth: copies fold back into the construction."""

import pytest
import torch

from gated_attention import GatedRNN, construct_rnn, random_attention
from gated_attention.analysis import gaussian_inputs, lam_groups, network, output_change
from gated_attention.analysis.consolidation import (
    balanced_penalty,
    consolidate,
    construction_counts,
    weight_penalty,
)
from gated_attention.readings.surplus_consolidation import consolidation_rows

X = gaussian_inputs(4, 6, 64, seed=1)


def add_copy(p: dict, j: int, scale: float, share: float, at: int) -> dict:
    """Insert at position ``at`` a copy of hidden neuron j whose state is ``scale`` times j's
    (first input gate times ``scale``, same lam), and move the fraction ``share`` of what the
    outputs read from j over to the copy: the function is unchanged."""
    q = {k: v.clone() for k, v in p.items()}
    w1, w2, nu = scale * q["W_in1"][j], q["W_in2"][j], q["nu"][j]
    o1, o2 = q["W_out1"][:, j].clone(), q["W_out2"][:, j].clone()
    q["W_out1"][:, j] *= 1 - share
    q["W_out2"][:, j] *= 1 - share
    ins = lambda t, row, dim=0: torch.cat(  # noqa: E731
        [t.narrow(dim, 0, at), row.unsqueeze(dim), t.narrow(dim, at, t.shape[dim] - at)], dim
    )
    q["W_in1"], q["W_in2"], q["nu"] = ins(q["W_in1"], w1), ins(q["W_in2"], w2), ins(q["nu"], nu)
    q["W_out1"] = ins(q["W_out1"], share / scale * o1, dim=1)
    q["W_out2"] = ins(q["W_out2"], share / scale * o2, dim=1)
    return q


def construction_with_copies(seed=0):
    """The symmetric construction (d = 4: 10 key-value + 4 query neurons) with two copies of
    key-value neuron 0 and one of query neuron 10, each copy inserted right after its original,
    so that the first 10 neurons of the key-value group include a neuron and its copy."""
    att = random_attention(4, seed=seed)
    built = network(construct_rnn(att, "symmetric"))
    g = lam_groups(built)
    assert g.one == list(range(10)) and g.zero == list(range(10, 14))
    p = add_copy(built.params, 10, scale=-0.5, share=0.3, at=11)  # query copy (indices below same)
    p = add_copy(p, 0, scale=2.0, share=0.6, at=1)
    p = add_copy(p, 0, scale=0.7, share=0.5, at=1)
    return att, built, network(p)


def test_copies_fold_back_into_the_construction():
    att, built, rnn = construction_with_copies()
    assert rnn.n == 17 and output_change(built, rnn, X) < 1e-12  # the same function
    g = lam_groups(rnn)
    assert len(g.one) == 12 and len(g.zero) == 5
    c = consolidate(rnn, g, X, teacher=att)
    assert (c.n_before, c.n_after) == (17, 14)
    kv, q = c.groups
    assert (kv.name, kv.size, kv.r, q.name, q.size, q.r) == ("key-value", 12, 10, "query", 5, 4)
    assert kv.kept_energy == pytest.approx(1.0, abs=1e-12)
    assert q.kept_energy == pytest.approx(1.0, abs=1e-12)
    assert kv.worst_fit_error < 1e-9 and q.worst_fit_error < 1e-9
    assert len({0, 1, 2} & set(kv.basis)) == 1  # one of neuron 0 and its two copies
    assert kv.lam == 1.0 and q.lam == 0.0
    assert c.output_change < 1e-9
    assert c.loss_before < 1e-20 and c.loss_after < 1e-20
    # the copies cost penalty: the consolidated network is the construction up to rescalings
    assert c.balanced_penalty_after < c.balanced_penalty_before - 1.0
    assert c.balanced_penalty_after == pytest.approx(balanced_penalty(built), rel=1e-8)
    assert c.penalty_before == pytest.approx(weight_penalty(rnn))
    assert c.break_even_weight_decay < 1e-20  # any weight decay prefers the consolidated net
    (row,) = consolidation_rows([("planted", c)])
    assert (row.member, row.n_before, row.kv, row.q, row.n_after) == ("planted", 17, 12, 5, 14)
    assert row.break_even == c.break_even_weight_decay and row.penalty == c.penalty_before


def test_the_construction_is_its_own_consolidation():
    att = random_attention(4, seed=2)
    built = network(construct_rnn(att, "symmetric"))
    c = consolidate(built, lam_groups(built), X, teacher=att)
    assert c.n_after == 14 and c.output_change < 1e-12
    assert c.balanced_penalty_after == pytest.approx(c.balanced_penalty_before, rel=1e-8)
    # the singular vectors themselves mix key-value neurons: their forms are no products
    kv, q = c.groups
    assert kv.svd_fit_error > 1e-2 and kv.worst_fit_error < 1e-12


def test_too_few_directions_change_the_function():
    att, _, rnn = construction_with_copies(1)
    g = lam_groups(rnn)
    c = consolidate(rnn, g, X, teacher=att, counts={"one": 9, "zero": 4})
    assert c.n_after == 13 and c.groups[0].kept_energy < 1 - 1e-6
    assert c.output_change > 1e-3 and c.loss_after > 1e3 * max(c.loss_before, 1e-30)
    assert c.break_even_weight_decay > 1e-3


def test_a_neuron_that_is_no_copy_is_not_consolidated_away():
    """A fifth lam = 0 neuron with a state of its own, read by an output neuron: the query group
    then holds 5 directions, and 4 of them cannot carry the function."""
    att = random_attention(4, seed=3)
    p = dict(network(construct_rnn(att, "symmetric")).params)
    g = torch.Generator().manual_seed(5)
    p["W_in1"] = torch.cat([p["W_in1"], torch.randn(1, 5, generator=g, dtype=torch.float64)])
    p["W_in2"] = torch.cat([p["W_in2"], torch.randn(1, 5, generator=g, dtype=torch.float64)])
    p["nu"] = torch.cat([p["nu"], p["nu"][10:11]])
    p["W_out1"] = torch.cat([p["W_out1"], torch.zeros(16, 1, dtype=torch.float64)], dim=1)
    p["W_out2"] = torch.cat([p["W_out2"], torch.zeros(16, 1, dtype=torch.float64)], dim=1)
    p["W_out2"][0, 14] = 0.5  # output neuron 0 now also reads the new neuron
    net = network(p)
    c = consolidate(net, lam_groups(net), X, teacher=att)
    assert c.groups[1].size == 5 and c.groups[1].kept_energy < 1 - 1e-6
    assert c.output_change > 1e-2


def test_groups_without_surplus_and_neurons_between_are_kept():
    """An untrained network (lam spread over [0, 1]): the small groups and the neurons with lam
    in between stay as they are, so nothing changes."""
    rnn = GatedRNN(4, 12, 12, seed=3, dtype=torch.float64)
    rnn.set_lam(torch.tensor([1.0, 1.0, 0.995, 0.0, 0.004, 0.0] + [0.5] * 6, dtype=torch.float64))
    net = network(rnn)
    att = random_attention(4, seed=0)
    g = lam_groups(net)
    assert (len(g.one), len(g.zero), len(g.between)) == (3, 3, 6)
    c = consolidate(net, g, X, teacher=att)
    assert c.n_after == 12 and [grp.r for grp in c.groups] == [3, 3]
    assert c.output_change < 1e-12 and c.groups[0].worst_fit_error == 0.0
    assert c.penalty_after == pytest.approx(c.penalty_before, rel=1e-12)


def test_balanced_penalty_is_invariant_under_the_rescalings():
    att = random_attention(4, seed=4)
    p = network(construct_rnn(att, "symmetric"))
    q = {k: v.clone() for k, v in p.params.items()}
    q["W_in1"][3] *= 3.0
    q["W_in2"][3] /= 3.0
    q["W_in1"][12] *= 0.2  # the state of hidden neuron 12 shrinks by 5: its readers grow
    q["W_out1"][:, 12] *= 5.0
    q["W_out2"][:, 12] *= 5.0
    q["W_out1"][7] *= 2.0  # output neuron 7: both rows doubled, its readout quartered
    q["W_out2"][7] *= 2.0
    q["D"][:, 7] /= 4.0
    q = network(q)
    assert output_change(p, q, X) < 1e-12
    assert weight_penalty(q) > weight_penalty(p) + 1.0
    assert balanced_penalty(q) == pytest.approx(balanced_penalty(p), rel=1e-9)
    assert balanced_penalty(p) <= weight_penalty(p)


def test_errors_name_the_problem():
    att = random_attention(4, seed=0)
    built = network(construct_rnn(att, "symmetric"))
    g = lam_groups(built)
    assert construction_counts(4) == {"one": 10, "zero": 4}
    with pytest.raises(ValueError, match="shape"):
        consolidate(built, g, X[..., :3], teacher=att)
    with pytest.raises(ValueError, match="LamGroups"):
        consolidate(built, lam_groups(torch.ones(3, dtype=torch.float64)), X, teacher=att)
    with pytest.raises(ValueError, match="counts"):
        consolidate(built, g, X, teacher=att, counts={"one": 0, "zero": 4})
    side = network(construct_rnn(att, "side"))
    with pytest.raises(ValueError, match="output gating"):
        consolidate(side, lam_groups(side), X, teacher=att)


def test_folded_counts_the_members_weight_decay_prefers_folded():
    from types import SimpleNamespace

    from gated_attention.readings.surplus_consolidation import folded

    def cons(n_before, n_after, change, break_even):
        return SimpleNamespace(
            n_before=n_before,
            n_after=n_after,
            output_change=change,
            break_even_weight_decay=break_even,
        )

    rows = [
        ("paper-gpu seed 0", cons(27, 14, 1e-4, 1e-3)),  # folds, and 1e-3 < 0.07
        ("paper-gpu seed 1", cons(37, 14, 5e-2, 1e-3)),  # the output changes by 5%
        ("quick seed 3", cons(20, 14, 1e-4, 0.1)),  # break-even above its decay
        ("quick seed 4", cons(14, 14, 0.0, 0.0)),  # nothing to fold
    ]
    assert folded(rows, [0.07] * 4) == ["paper-gpu seed 0"]
    assert folded(rows[2:3], [0.07]) == []
    assert folded(rows[2:3], [0.2]) == ["quick seed 3"]
