"""Reordering and orienting neurons so that the weights show the blocks of Fig. 1 (Fig. 2B).

Permuting neurons, swapping the two rows of a gate and rescaling W_in1[n] -> c W_in1[n],
W_in2[n] -> W_in2[n] / c leave the function unchanged; ``reorder`` uses them for this layout:

    hidden:  key-value neurons (lam ~ 1) first, then query neurons (lam ~ 0), then the rest;
             a query neuron is oriented so that W_in1 reads the constant 1, scaled to exactly 1.
    output:  each output neuron oriented so that W_out1 reads the key-value neurons and W_out2
             the query neurons, then sorted by the query neuron it reads (then by key-value
             neuron); key-value neurons are sorted by the first output neuron that reads them.
"""

from __future__ import annotations

import dataclasses

import torch

from .boundary import Network, require
from .lam_groups import lam_groups
from .thresholds import LAM_TOL


@dataclasses.dataclass(frozen=True)
class Reordered:
    """The reordered network; its first ``n_one`` hidden neurons have lam ~ 1, the next ``n_zero``
    lam ~ 0."""

    net: Network
    n_one: int
    n_zero: int


def reorder(net: Network, tol: float = LAM_TOL) -> Reordered:
    """The same function with neurons in the construction's layout (see the module docstring)."""
    if require(net, "reorder").side:
        raise ValueError("reorder expects output gating (W_out1, W_out2), not side gating")
    g = lam_groups(net, tol)
    d = net.d
    W_in1, W_in2 = net.W_in1.clone(), net.W_in2.clone()
    for k in g.zero:  # orient: W_in1 reads the constant, scaled to 1
        if W_in2[k, d].abs() > W_in1[k, d].abs():
            W_in1[k], W_in2[k] = W_in2[k].clone(), W_in1[k].clone()
        c = W_in1[k, d]
        if c != 0:
            W_in1[k], W_in2[k] = W_in1[k] / c, W_in2[k] * c
    W_out1, W_out2 = net.W_out1.clone(), net.W_out2.clone()
    kv, qn = torch.tensor(g.one, dtype=torch.long), torch.tensor(g.zero, dtype=torch.long)
    m = W_out1.shape[0]
    for j in range(m):  # orient: W_out1 reads the key-value neurons, W_out2 the queries
        if W_out1[j, qn].abs().sum() > W_out2[j, qn].abs().sum():
            W_out1[j], W_out2[j] = W_out2[j].clone(), W_out1[j].clone()

    def strongest(row, group):
        return int(group[row[group].abs().argmax()]) if len(group) else -1

    q_rank = {int(k): r for r, k in enumerate(qn)}
    keys = sorted(  # (rank of the query neuron read, key-value neuron read, j), in output order
        (q_rank.get(strongest(W_out2[j], qn), len(qn)), strongest(W_out1[j], kv), j)
        for j in range(m)
    )
    output_order = [j for *_, j in keys]
    kv_order = [kj for _, kj, _ in keys if kj >= 0] + [int(k) for k in kv]  # first reader, rest
    hidden_order = list(dict.fromkeys(kv_order)) + [int(k) for k in qn] + list(g.between)
    oriented = dataclasses.replace(net, W_in1=W_in1, W_in2=W_in2, W_out1=W_out1, W_out2=W_out2)
    return Reordered(oriented.subnetwork(hidden_order, output_order), len(g.one), len(g.zero))
