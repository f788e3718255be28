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
    """(the symmetric construction of ``teacher`` with output neuron 0 split into three, their
    indices): (a.h)(b.h) = ((a+b).h)^2/4 - ((a-b).h)^2/4, the second split once more into 0.7 and
    0.3 of its readout. Same function; only the three together have the construction's pattern."""
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
    """The group Fig. 2C draws (``seed``: its member; None: planted); ``error``: the merge's
    relative error (trained); ``found``: the groups ``analysis.merge`` finds (planted)."""

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
    """The first group merged in any member of ``rows`` (``MemberRow``s), else the planted one."""
    merged = [row for row in rows if row.merged]
    if merged:
        r = merged[0].rev
        return MergeShown(r.pruned.net, r.merged.groups[0], merged[0].seed, r.merged.errors[0])
    net, group = planted_merge_group(teacher)
    return MergeShown(net, group, None, found=merge(net, rtol=1e-8).groups)
