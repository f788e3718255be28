"""One type for a trained network (analysis/boundary.py): converted once, checked once.

The boundary refuses non-finite weights with the tensors named, every analysis function refuses
anything but a Network with a TypeError that says how to convert, and the chained steps of the
analysis never convert again."""

import dataclasses

import pytest
import torch

from gated_attention import GatedRNN, construct_rnn, random_attention
from gated_attention.analysis import (
    Network,
    boundary,
    consolidation,
    contributions,
    gaussian_inputs,
    lam_groups,
    member,
    merge,
    merge_error,
    network,
    output_change,
    output_kernels,
    prune,
    reorder,
    reverse_engineer,
    rnn_polynomial,
    score_kv,
    score_q,
    state_spectrum,
    success,
)
from gated_attention.analysis import recall_algorithms as ar
from gated_attention.tasks.associative_recall import AssociativeRecall

ATT = random_attention(4, seed=0)
X = gaussian_inputs(4, 6, 8, seed=1)


def built() -> GatedRNN:
    return construct_rnn(ATT, "symmetric")


def test_nan_in_w_out1_is_named_with_its_count():
    p = dict(network(built()).params)
    W = p["W_out1"].clone()
    W[0, :3] = float("nan")
    with pytest.raises(ValueError, match="non-finite weights: W_out1 has 3 NaN entries"):
        network({**p, "W_out1": W})


def test_inf_in_nu_is_named_and_every_bad_tensor_listed():
    p = dict(network(built()).params)
    nu, D = p["nu"].clone(), p["D"].clone()
    nu[2] = float("inf")
    D[1, 1], D[0, 0] = float("nan"), -float("inf")
    with pytest.raises(ValueError, match="nu has 1 inf entry") as err:
        network({**p, "nu": nu})
    assert "W_out1" not in str(err.value) and "diverged" in str(err.value)
    with pytest.raises(ValueError, match="nu has 1 inf entry, D has 1 NaN entry and 1 inf entry;"):
        network({**p, "nu": nu, "D": D})


def test_a_diverged_gated_rnn_is_refused_before_pruning():
    rnn = built()
    with torch.no_grad():
        rnn.W_out1[1, 1] = float("nan")
    with pytest.raises(ValueError, match="W_out1 has 1 NaN entry") as err:
        prune(network(rnn))
    assert "every neuron" not in str(err.value)  # not the misleading message of prune


ENSEMBLE = {k: torch.stack([v, 2 * v]) for k, v in network(built()).params.items()}
TASK = AssociativeRecall(2, 2)
RECALL = network(GatedRNN(4, 3, 2, d_out=2, seed=0, dtype=torch.float64))
BATCH = TASK.sample_batch(4, torch.Generator().manual_seed(0))
CALLS = {
    "prune": lambda x: prune(x),
    "contributions": lambda x: contributions(x),
    "output_change": lambda x: output_change(x, x, X),
    "lam_groups": lambda x: lam_groups(x),
    "score_kv": lambda x: score_kv(x, ATT, X, [0]),
    "score_q": lambda x: score_q(x, ATT, X, [0]),
    "state_spectrum": lambda x: state_spectrum(x, X, [0]),
    "rnn_polynomial": lambda x: rnn_polynomial(x, 2),
    "output_kernels": lambda x: output_kernels(x, [0]),
    "merge_error": lambda x: merge_error(x, [0, 1]),
    "merge": lambda x: merge(x),
    "reorder": lambda x: reorder(x),
    "reverse_engineer": lambda x: reverse_engineer(x, ATT, T=4),
    "kv_score_unpruned": lambda x: success.kv_score_unpruned(x, ATT, X),
    "weight_penalty": lambda x: consolidation.weight_penalty(x),
    "balanced_penalty": lambda x: consolidation.balanced_penalty(x),
    "consolidate": lambda x: consolidation.consolidate(x, None, X, teacher=ATT),
    "consolidate_student": lambda x: consolidation.consolidate_student(x, ATT, T=4),
    "pair_blocks": lambda x: ar.pair_blocks(x, 2, 2),
    "query_increments": lambda x: ar.query_increments(x, 2, 2),
    "recall_score_kv": lambda x: ar.recall_score_kv(x, BATCH, [0], 2),
    "value_neurons": lambda x: ar.value_neurons(x, 2, 2),
    "analyse_recall": lambda x: ar.analyse_recall(x, TASK, BATCH),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("kind", ["GatedRNN", "dict"])
def test_every_analysis_function_takes_a_network_only(name, kind):
    in_recall = getattr(getattr(ar, name, None), "__module__", None) == ar.__name__
    rnn = built() if "recall" not in name and not in_recall else RECALL.rnn()
    given = rnn if kind == "GatedRNN" else rnn.params()
    with pytest.raises(TypeError, match=r"analysis\.network\(x\)") as err:
        CALLS[name](given)
    assert f"got {kind}" in str(err.value)


def test_the_network_type():
    rnn = built()
    net = network(rnn)
    assert isinstance(net, Network) and Network.of(net) is net and network(net) is net
    assert (net.n, net.m, net.d, net.d_out, net.side) == (14, 16, 4, 4, False)
    assert repr(net) == "Network(d=4, n=14, m=16, d_out=4)"
    assert list(net.params) == ["W_in1", "W_in2", "nu", "W_out1", "W_out2", "D"]
    assert all(v.dtype == torch.float64 and not v.requires_grad for v in net.params.values())
    with torch.no_grad():
        rnn.W_in1.zero_()  # a copy: training the model on does not change the analysed network
    assert float(net.W_in1.abs().max()) > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        net.nu = net.nu
    again = net.rnn()
    assert isinstance(again, GatedRNN) and torch.equal(again.lam, net.lam)
    assert output_change(net, network(again), X) == 0.0
    side = network(construct_rnn(ATT, "side"))
    assert (side.side, side.m, side.W_out1) == (True, 0, None)
    assert list(side.params) == ["W_in1", "W_in2", "nu", "W_side", "D"]
    one = network(member(ENSEMBLE, 1))
    assert torch.equal(one.D, 2 * net.D)
    with pytest.raises(ValueError, match="analysis.member"):
        network(ENSEMBLE)
    with pytest.raises(ValueError, match="W_out2 must have shape"):
        network({**net.params, "W_out2": net.W_out2[:, :3]})


def test_the_steps_produce_networks_and_never_convert_again(monkeypatch):
    net = network(built())
    conversions = []
    original = boundary.Network.of.__func__

    def counting(cls, x):
        conversions.append(type(x).__name__)
        return original(cls, x)

    monkeypatch.setattr(boundary.Network, "of", classmethod(counting))
    rev = reverse_engineer(net, ATT, T=4, prune_tol=1e-9, batch=16)
    cons = consolidation.consolidate_student(net, ATT, T=4, prune_tol=1e-9, batch=16)
    assert conversions == []
    for out in (rev.pruned.net, rev.merged.net, rev.reordered.net, cons.net):
        assert isinstance(out, Network)
    assert isinstance(net.subnetwork(list(range(net.n))[::-1]), Network)
