"""Lossless pruning of a trained gated RNN (Sec. 4.1, Fig. 2A: "prune neurons whose weights are all
zero"). The rules, each a bound on a neuron's contribution (|.| the Euclidean norm over the neurons
still kept), applied until nothing changes:

    hidden neuron n is silent   if |W_in1[n]| |W_in2[n]| <= tol        (its input u_n is ~0)
    hidden neuron n is unread   if sum_m |D[:, m]| (|W_out1[m, n]| |W_out2[m]|
                                     + |W_out2[m, n]| |W_out1[m]|) <= tol   (nothing reads h_n)
                                (side gating: |D[:, n]| |W_side[n]| <= tol)
    output neuron m is silent   if |W_out1[m]| |W_out2[m]| |D[:, m]| <= tol

The products are invariant under the rescalings W_in1[n] -> c W_in1[n], W_in2[n] -> W_in2[n] / c
that leave the network unchanged.
"""

from __future__ import annotations

import dataclasses

import torch

from ..models.gated_rnn import gated_rnn_forward
from .boundary import Network, require
from .thresholds import PRUNE_TOL


@dataclasses.dataclass(frozen=True)
class Pruned:
    """The smaller network and the indices of the original's ``hidden`` and ``output`` neurons
    it keeps (in their original order)."""

    net: Network
    hidden: list[int]
    output: list[int]


def input_products(W_in1: torch.Tensor, W_in2: torch.Tensor) -> torch.Tensor:
    """|W_in1[n]| |W_in2[n]|, the first rule's product: (*E, n), over any leading ensemble dims."""
    return W_in1.norm(dim=-1) * W_in2.norm(dim=-1)


def _output_bounds(net: Network, h, o) -> tuple[torch.Tensor, torch.Tensor]:
    """Over the kept hidden (h) and output (o) neurons: the output rule's product (|o|,), and
    the terms of the unread rule's sum (|o|, |h|)."""
    W_o1, W_o2 = net.W_out1[o][:, h], net.W_out2[o][:, h]  # (|o|, |h|)
    n1, n2, nD = W_o1.norm(dim=1), W_o2.norm(dim=1), net.D[:, o].norm(dim=0)
    return n1 * n2 * nD, nD[:, None] * (W_o1.abs() * n2[:, None] + W_o2.abs() * n1[:, None])


def prune(net: Network, tol: float = PRUNE_TOL) -> Pruned:
    """Remove dead hidden and output-gating neurons (rules in the module docstring)."""
    require(net, "prune")
    if not (isinstance(tol, (int, float)) and tol >= 0):
        raise ValueError(f"tol must be a non-negative number, got {tol!r}")
    side = net.side
    h = torch.arange(net.n)[input_products(net.W_in1, net.W_in2) > tol]  # silent neurons out
    o = torch.arange(net.m)
    if side:  # one pass: a neuron's side bound does not depend on the others
        h = h[net.D[:, h].norm(dim=0) * net.W_side[h].norm(dim=1) > tol]
    else:
        while True:
            out, reach = _output_bounds(net, h, o)
            live_o = out > tol  # (|o|,)
            read = reach[live_o].sum(dim=0) > tol  # (|h|,)
            if bool(live_o.all()) and bool(read.all()):
                break
            o, h = o[live_o], h[read]
    if h.numel() == 0 or (not side and o.numel() == 0):
        raise ValueError(
            f"pruning with tol={tol} removes every neuron (the network computes ~0); lower tol"
        )
    return Pruned(net.subnetwork(h, o), h.tolist(), o.tolist())


def contributions(net: Network) -> dict[str, torch.Tensor]:
    """The three bounds of the module docstring for every neuron, as ``prune``'s first pass reads
    them (Fig. 2A; output gating only): {"hidden_in": (n,), "hidden_out": (n,), "output": (m,)}."""
    if require(net, "contributions").side:
        raise ValueError("contributions expects output gating (W_out1, W_out2)")
    out, reach = _output_bounds(net, torch.arange(net.n), torch.arange(net.m))
    return {
        "hidden_in": input_products(net.W_in1, net.W_in2),
        "hidden_out": reach.sum(dim=0),
        "output": out,
    }


def output_change(a: Network, b: Network, x: torch.Tensor) -> float:
    """max |y_a - y_b| over a batch x (B, T, d), in float64: what pruning or merging changed."""
    require(a, "output_change")
    require(b, "output_change")
    x = torch.as_tensor(x, dtype=torch.float64)
    if x.dim() != 3 or x.shape[-1] != a.d:
        raise ValueError(f"x must have shape (B, T, d={a.d}), got {tuple(x.shape)}")
    with torch.no_grad():
        return float((gated_rnn_forward(x, a.params) - gated_rnn_forward(x, b.params)).abs().max())
