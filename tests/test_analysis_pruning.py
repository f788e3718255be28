"""Lossless pruning on planted truth: the symmetric construction padded with dead neurons."""

import pytest
import torch

from gated_attention import GatedRNN, construct_rnn, random_attention
from gated_attention.analysis import (
    gaussian_inputs,
    member,
    network,
    output_change,
    prune,
)


def padded_construction(seed=0, tiny=0.0):
    """The symmetric construction (n=14, m=16 for d=4) hidden among dead neurons.

    Dead hidden neurons: one with a zero W_in1 row, one with a zero W_in2 row (both read by live
    output neurons), one with live input but no output neuron reading it. Dead output neurons:
    one with D column 0, one with W_out2 row 0. ``tiny`` puts noise of that size on dead weights.
    Returns (padded network, construction, kept hidden indices, kept output indices).
    """
    att = random_attention(4, seed=seed)
    rnn = network(construct_rnn(att, "symmetric"))
    p = rnn.params
    n, m = 14, 16
    g = torch.Generator().manual_seed(seed)
    N, Mo = n + 3, m + 2
    perm_h = torch.randperm(N, generator=g)  # where the construction's neurons go
    perm_o = torch.randperm(Mo, generator=g)
    q = {k: torch.zeros(N, 5, dtype=torch.float64) for k in ("W_in1", "W_in2")}
    q["nu"] = torch.zeros(N, dtype=torch.float64)
    q["W_out1"] = torch.zeros(Mo, N, dtype=torch.float64)
    q["W_out2"] = torch.zeros(Mo, N, dtype=torch.float64)
    q["D"] = torch.zeros(4, Mo, dtype=torch.float64)
    h_live, o_live = perm_h[:n], perm_o[:m]
    q["W_in1"][h_live], q["W_in2"][h_live], q["nu"][h_live] = p["W_in1"], p["W_in2"], p["nu"]
    for k in ("W_out1", "W_out2"):
        q[k][o_live[:, None], h_live[None, :]] = p[k]
    q["D"][:, o_live] = p["D"]
    dead_h, dead_o = perm_h[n:], perm_o[m:]

    def noise(*shape):
        return tiny * torch.randn(*shape, generator=g, dtype=torch.float64)

    # dead hidden 0: W_in1 zero, W_in2 random, read by the live outputs
    q["W_in2"][dead_h[0]] = torch.randn(5, generator=g, dtype=torch.float64)
    q["W_in1"][dead_h[0]] = noise(5)
    # dead hidden 1: W_in2 zero
    q["W_in1"][dead_h[1]] = torch.randn(5, generator=g, dtype=torch.float64)
    q["W_in2"][dead_h[1]] = noise(5)
    for k in (0, 1):
        q["W_out1"][o_live, dead_h[k]] = torch.randn(m, generator=g, dtype=torch.float64)
    # dead hidden 2: a live state that no output neuron reads
    q["W_in1"][dead_h[2]] = torch.randn(5, generator=g, dtype=torch.float64)
    q["W_in2"][dead_h[2]] = torch.randn(5, generator=g, dtype=torch.float64)
    q["W_out1"][o_live, dead_h[2]] = noise(m)
    q["W_out2"][o_live, dead_h[2]] = noise(m)
    # dead output 0: D column zero; it reads the dead hidden 2 (which is then also unread)
    q["W_out1"][dead_o[0]] = torch.randn(N, generator=g, dtype=torch.float64)
    q["W_out2"][dead_o[0]] = torch.randn(N, generator=g, dtype=torch.float64)
    q["D"][:, dead_o[0]] = noise(4)
    # dead output 1: W_out2 zero
    q["W_out1"][dead_o[1]] = torch.randn(N, generator=g, dtype=torch.float64)
    q["W_out2"][dead_o[1]] = noise(N)
    q["D"][:, dead_o[1]] = torch.randn(4, generator=g, dtype=torch.float64)
    return network(q), rnn, sorted(h_live.tolist()), sorted(o_live.tolist())


@pytest.mark.parametrize("seed", [0, 1])
def test_prune_recovers_the_planted_construction(seed):
    q, rnn, h, o = padded_construction(seed)
    x = gaussian_inputs(4, 16, 32, seed=3)
    pr = prune(q, tol=1e-9)
    assert pr.hidden == h and pr.output == o
    assert (pr.net.n, pr.net.m) == (14, 16)
    assert output_change(q, pr.net, x) < 1e-9
    assert output_change(rnn, pr.net, x) < 1e-9  # the same function as the construction


def test_prune_threshold_decides_near_zero_weights():
    q, _, h, o = padded_construction(0, tiny=1e-5)
    x = gaussian_inputs(4, 16, 32, seed=3)
    strict = prune(q, tol=0.0)  # nothing is exactly zero: everything stays
    assert (strict.net.n, strict.net.m) == (17, 18)
    loose = prune(q, tol=1e-3)
    assert loose.hidden == h and loose.output == o
    change = output_change(q, loose.net, x)
    assert 0 < change < 1.0  # not lossless any more: the chapter reports this number


def test_prune_keeps_a_live_network_whole():
    rnn = GatedRNN(3, 6, 5, seed=0, dtype=torch.float64)
    pr = prune(network(rnn), tol=1e-8)
    assert pr.hidden == list(range(6)) and pr.output == list(range(5))


def test_prune_side_gating():
    att = random_attention(3, seed=0)
    rnn = network(construct_rnn(att, "side"))
    p = dict(rnn.params)
    p["W_side"] = torch.cat([p["W_side"], torch.zeros(2, 4, dtype=torch.float64)])
    for k in ("W_in1", "W_in2"):
        p[k] = torch.cat([p[k], torch.randn(2, 4, dtype=torch.float64)])
    p["nu"] = torch.cat([p["nu"], torch.zeros(2, dtype=torch.float64)])
    p["D"] = torch.cat([p["D"], torch.randn(3, 2, dtype=torch.float64)], dim=1)
    pr = prune(network(p), tol=1e-9)
    assert pr.hidden == list(range(9))
    assert output_change(rnn, pr.net, gaussian_inputs(3, 8, 8, seed=0)) < 1e-10


def test_member_and_round_trip():
    q, *_ = padded_construction(0)
    ens = {k: torch.stack([v, 2 * v]) for k, v in q.params.items()}
    one = member(ens, 1)
    assert torch.equal(one["D"], 2 * q.D)
    assert torch.equal(network(one).W_out1, 2 * q.W_out1)
    assert torch.equal(network(q.rnn()).W_out1, q.W_out1)


def test_bad_inputs_raise():
    q, *_ = padded_construction(0)
    with pytest.raises(ValueError, match="tol"):
        prune(q, tol=-1)
    with pytest.raises(ValueError, match="ensemble"):
        network({k: v[None] for k, v in q.params.items()})
    with pytest.raises(ValueError, match="lacks"):
        network({"W_in1": q.W_in1})
    with pytest.raises(TypeError, match="GatedRNN"):
        network([1, 2])
    with pytest.raises(TypeError, match=r"analysis\.network"):
        prune(q.params)
    with pytest.raises(ValueError, match="every neuron"):
        prune(q, tol=1e9)


def test_one_threshold_for_every_analysis():
    """The pruning default, the reverse engineering and the Sec. 5.2 'used' rule read one value."""
    import inspect

    from gated_attention import analysis
    from gated_attention.analysis import pruning
    from gated_attention.readings import gd_learned

    assert analysis.PRUNE_TOL == 1e-3 and analysis.LAM_TOL == 0.01
    assert inspect.signature(pruning.prune).parameters["tol"].default == analysis.PRUNE_TOL
    sig = inspect.signature(analysis.reverse_engineer).parameters
    assert sig["prune_tol"].default == analysis.PRUNE_TOL
    assert sig["lam_tol"].default == analysis.LAM_TOL
    assert "USED_TOL" not in vars(gd_learned)  # the first pruning rule, not a copy of it
    W1, W2 = torch.ones(2, 3, 4), torch.full((2, 3, 4), 2.0)
    assert torch.equal(pruning.input_products(W1, W2), torch.full((2, 3), 8.0))
