"""Reverse engineering associative recall (gated_attention/analysis/recall_algorithms.py) on
planted truth: networks built by hand whose algorithm is known
(gated_attention/constructions/recall_networks.py), each beside a perturbed twin that must fail
the test the original passes."""

import pytest
import torch

from gated_attention.analysis import network
from gated_attention.analysis import recall_algorithms as ar
from gated_attention.constructions import recall_networks as cr
from gated_attention.models.gated_rnn import gated_rnn_forward
from gated_attention.tasks.associative_recall import AssociativeRecall

N = 4


def batch(n=N, size=2000, seed=0, **kw):
    task = AssociativeRecall(n, n, **kw)
    return task, task.sample_batch(size, torch.Generator().manual_seed(seed))


def query_out(rnn, b):
    """The outputs at the query step of a GatedRNN or an analysis Network."""
    with torch.no_grad():
        return gated_rnn_forward(b.x, network(rnn).params)[:, -1]


def with_current_code(net, code):
    """The squared-difference network whose current-key neuron reads another code (the twin)."""
    p = {k: v.clone() for k, v in net.params.items()}
    p["W_in2"][N, :N] = torch.as_tensor(code, dtype=torch.float64)
    return network(p)


def mixed_side():
    """The compressed side network with key and value parts mixed into both gates (the twin)."""
    p = network(cr.compressed_side_rnn(N)).params
    g = torch.Generator().manual_seed(1)
    p["W_in1"][:-1, :N] += torch.randn(p["W_in1"][:-1, :N].shape, generator=g, dtype=torch.float64)
    p["W_in2"][:-1, N : 2 * N] += torch.randn(
        p["W_in2"][:-1, N : 2 * N].shape, generator=g, dtype=torch.float64
    )
    return network(p)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_constructions_solve_the_task(n):
    task, b = batch(n)
    for side in (False, True):
        rnn = cr.attention_rnn(n, n, side=side)
        assert rnn.n == cr.naive_neurons(n, n) + (0 if side else n)
        torch.testing.assert_close(query_out(rnn, b), b.y[:, -1], rtol=0, atol=1e-12)
    comp = cr.compressed_side_rnn(n)
    assert comp.n == cr.compressed_neurons(n) == (n - 1) ** 2 + 1 < cr.naive_neurons(n, n)
    torch.testing.assert_close(query_out(comp, b), b.y[:, -1], rtol=0, atol=1e-12)
    sd = cr.squared_difference_rnn(n, n)
    assert (sd.n, sd.m) == (n + 2, n)
    q = query_out(sd, b)
    assert bool((q.argmax(1) == b.answer).all())
    torch.testing.assert_close(q.gather(1, b.answer[:, None])[:, 0], torch.ones(2000).double())
    # the compression needs distinct values: with i.i.d. values it is wrong, attention is not
    _, b_iid = batch(n, distinct_values=False)
    assert float((query_out(comp, b_iid) - b_iid.y[:, -1]).abs().max()) > 0.1
    attention = cr.attention_rnn(n, n, side=True)
    torch.testing.assert_close(query_out(attention, b_iid), b_iid.y[:, -1], rtol=0, atol=1e-12)


def test_pair_blocks_and_query_increments_read_the_weights():
    rnn = network(cr.attention_rnn(N, N))  # neuron v * N + k stores M[v, k]; query k reads e_k
    P = ar.pair_blocks(rnn, N, N)
    assert P.shape == (N * N + N, N, N)
    for v in range(N):
        for k in range(N):
            expect = torch.zeros(N, N, dtype=torch.float64)
            expect[v, k] = 1.0
            torch.testing.assert_close(P[v * N + k], expect)
    Q = ar.query_increments(rnn, N, N)
    torch.testing.assert_close(Q[N * N :], torch.eye(N, dtype=torch.float64))
    assert float(Q[: N * N].abs().max()) == 0.0  # the query step adds nothing to M
    with pytest.raises(ValueError, match="inputs"):
        ar.pair_blocks(rnn, N, N + 1)


def test_block_structure_rank_one_and_negative_peak():
    naive = ar.block_structure(ar.pair_blocks(network(cr.attention_rnn(N, N, side=True)), N, N))
    torch.testing.assert_close(naive.rank1, torch.ones(N * N, dtype=torch.float64))
    torch.testing.assert_close(naive.negative_peak, torch.full((N * N,), 1 / (N - 1)).double())
    assert naive.peak[5].tolist() == [1, 1]  # neuron (v, k) = (1, 1) peaks at its own entry
    comp = ar.block_structure(ar.pair_blocks(network(cr.compressed_side_rnn(N)), N, N))
    kv = comp.rank1[:-1]  # the last neuron holds a constant: its centred block is zero
    torch.testing.assert_close(kv, torch.ones_like(kv))
    torch.testing.assert_close(comp.negative_peak[:-1], torch.ones_like(kv))  # equal amplitude
    assert torch.isnan(comp.rank1[-1]) and float(comp.norm[-1]) < 1e-12
    twin = ar.block_structure(ar.pair_blocks(mixed_side(), N, N))
    assert float(twin.rank1[:-1].max()) < 0.99  # keys and values in both gates: not rank 1
    with pytest.raises(ValueError, match="shape"):
        ar.block_structure(torch.zeros(N, N))


def test_score_kv_reads_the_key_value_matrix():
    task, b = batch()
    M = ar.key_value_matrices(b, N)
    assert torch.equal(M.sum(dim=(1, 2)), torch.full((2000,), float(N), dtype=torch.float64))
    for rnn in (cr.attention_rnn(N, N, side=True), cr.compressed_side_rnn(N)):
        assert ar.recall_score_kv(network(rnn), b, range(rnn.n), N) < 1e-10
    sd = network(cr.squared_difference_rnn(N, N))
    assert ar.recall_score_kv(sd, b, [0, 1, 2, 3, 5], N) > 0.5  # codes are not M
    # twins: 14 of the 16 neurons still determine a permutation matrix (the compression);
    # the 8 of two values do not
    naive = network(cr.attention_rnn(N, N, side=True))
    assert ar.recall_score_kv(naive, b, range(2, N * N), N) < 1e-10
    assert ar.recall_score_kv(naive, b, range(2 * N), N) > 0.05


def test_value_neurons_find_the_per_value_memory():
    sd = network(cr.squared_difference_rnn(N, N))
    vn = ar.value_neurons(sd, N, N)
    assert vn.kv == [0, 1, 2, 3] and vn.value == [0, 1, 2, 3] and vn.current == [N]
    assert vn.per_value == [0, 1, 2, 3] and vn.values_covered == N
    assert vn.key_rank1 == pytest.approx(1.0)
    code = cr.default_code(N) - cr.default_code(N).mean()
    assert float((vn.code @ code).abs() / code.norm()) == pytest.approx(1.0)
    assert float(vn.current_alignment[0]) == pytest.approx(1.0)
    att = ar.value_neurons(network(cr.attention_rnn(N, N)), N, N)
    assert len(att.kv) == N * N and att.per_value == [] and att.values_covered == 0
    assert att.key_rank1 == pytest.approx(1 / (N - 1))
    twin = ar.value_neurons(with_current_code(sd, [1, 2, 4 / 3, 5 / 3]), N, N)
    assert float(twin.current_alignment[0]) < 0.9  # the current neuron reads another code


def test_squared_difference_fit_holds_only_for_the_squared_difference_network():
    task, b = batch()
    sd = network(cr.squared_difference_rnn(N, N))
    fit = ar.squared_difference_fit(query_out(sd, b), b)
    assert fit.r2 > 1 - 1e-9 and fit.ceiling == pytest.approx(1.0)
    code = cr.default_code(N)
    corr = torch.corrcoef(torch.stack([fit.code, code]))[0, 1]
    assert float(corr.abs()) == pytest.approx(1.0)  # the code, up to an affine map
    att = ar.squared_difference_fit(query_out(cr.attention_rnn(N, N), b), b)
    assert att.r2 < 0.5 and att.ceiling == pytest.approx(1.0)
    twin = with_current_code(sd, [1, 2, 4 / 3, 5 / 3])
    assert ar.squared_difference_fit(query_out(twin, b), b).r2 < 0.9
    _, b_iid = batch(distinct_values=False)
    with pytest.raises(ValueError, match="every value exactly once"):
        ar.squared_difference_fit(query_out(sd, b_iid), b_iid)


def test_analyse_recall_prunes_groups_and_orders():
    task, b = batch()
    p = dict(network(cr.squared_difference_rnn(N, N)).params)
    for k in ("W_in1", "W_in2"):  # a dead hidden neuron in front: pruning must remove it
        p[k] = torch.cat([torch.zeros(1, 2 * N + 1, dtype=torch.float64), p[k]])
    p["nu"] = torch.cat([torch.zeros(1, dtype=torch.float64), p["nu"]])
    for k in ("W_out1", "W_out2"):
        p[k] = torch.cat([torch.ones(N, 1, dtype=torch.float64), p[k]], dim=1)
    a = ar.analyse_recall(network(p), task, b, prune_tol=1e-9)
    assert a.pruned.hidden == list(range(1, N + 3)) and a.prune_change < 1e-12
    assert a.accuracy == a.accuracy_pruned == 1.0
    assert len(a.values.per_value) == N and a.score_kv > 0.5 and a.sd_fit.r2 > 1 - 1e-9
    assert [g[0].split(" ")[0] for g in a.groups] == ["key-value", "constant", "current"]
    torch.testing.assert_close(query_out(a.ordered, b), query_out(a.pruned.net, b))
    naive = network(cr.attention_rnn(N, N, side=True))
    side = ar.analyse_recall(naive, task, b, prune_tol=1e-9)
    assert side.pruned.net.n == N * N and side.score_kv < 1e-10 and side.sd_fit is None
    peaks = side.blocks.peak[side.hidden_order].tolist()
    assert peaks == sorted(peaks)  # ordered by the (v, k) each block stores
    comp = ar.analyse_recall(network(cr.compressed_side_rnn(N)), task, b, prune_tol=1e-9)
    assert comp.pruned.net.n == 10 and len(comp.values.kv) == 9 and comp.score_kv < 1e-10


def test_subnetwork_permuting_the_neurons_keeps_the_function():
    task, b = batch(size=50)
    rnn = network(cr.attention_rnn(N, N))
    g = torch.Generator().manual_seed(2)
    h, o = torch.randperm(rnn.n, generator=g).tolist(), torch.randperm(rnn.m, generator=g).tolist()
    torch.testing.assert_close(query_out(rnn.subnetwork(h, o), b), query_out(rnn, b))
