"""Fig. 2C: the group of output-gating neurons whose kernels the chapter draws: a trained
network's merged group where any member has one, else a planted group (App. C.2)."""

from __future__ import annotations

import dataclasses

import torch

from ..analysis.boundary import Network, network
from ..analysis.merging import merge
from ..constructions.gated_rnn import construct_rnn
from ..models.attention import LinearSelfAttention


def planted_merge_group(teacher: LinearSelfAttention) -> tuple[Network, list[int]]:
    """The symmetric construction of ``teacher`` with output-gating neuron 0 split into three
    neurons that together are one neuron in disguise; returns (the network, the three indices).

    (a.h)(b.h) = ((a+b).h)^2/4 - ((a-b).h)^2/4: two neurons with rank-1 kernels, the second split
    once more into 0.7 and 0.3 of its readout (the planted group of
    tests/test_analysis_merging.py). The network computes the same function as the construction;
    none of the three alone has the construction's pattern, their sum does.
    """
    p = network(construct_rnn(teacher, "symmetric"))
    a, b, d0 = p.W_out1[0], p.W_out2[0], p.D[:, 0]
    w1 = torch.stack([(a + b) / 2, (a - b) / 2, (a - b) / 2])
    w2 = torch.stack([(a + b) / 2, -(a - b) / 2, -(a - b) / 2])
    q = dataclasses.replace(
        p,
        W_out1=torch.cat([p.W_out1[1:], w1]),
        W_out2=torch.cat([p.W_out2[1:], w2]),
        D=torch.cat([p.D[:, 1:], torch.stack([d0, 0.7 * d0, 0.3 * d0], dim=1)], dim=1),
    )
    return q, [q.m - 3, q.m - 2, q.m - 1]


@dataclasses.dataclass(frozen=True)
class MergeShown:
    """The group Fig. 2C draws: ``net`` and the indices ``group`` of its output-gating neurons;
    ``seed``: the member whose pruned network it is (None: the planted group); ``error``: the
    merge's relative error (trained), or ``found``: the groups ``analysis.merge`` finds in the
    planted network."""

    net: Network
    group: list[int]
    seed: int | None
    error: float | None = None
    found: list | None = None

    @property
    def planted(self) -> bool:
        """Whether the group is the planted one (no trained network merged)."""
        return self.seed is None


def merge_figure_group(rows, teacher: LinearSelfAttention) -> MergeShown:
    """The group of output-gating neurons Fig. 2C draws: the first group merged in any member
    of ``rows`` (``teacher_members.MemberRow``, in order) with its pruned network, or, when none
    merged, the planted group of ``planted_merge_group(teacher)``."""
    merged = [row for row in rows if row.merged]
    if merged:
        r = merged[0].rev
        return MergeShown(r.pruned.net, r.merged.groups[0], merged[0].seed, r.merged.errors[0])
    net, group = planted_merge_group(teacher)
    return MergeShown(net, group, None, found=merge(net, rtol=1e-8).groups)
