"""The whole reverse-engineering pipeline of Sec. 4.1 in one call (Fig. 2, Table 1).

trained student --prune--> pruned --lam_groups--> key-value / query neurons
    --score_kv, score_q--> Table 1 scores      (on the pruned network)
    --rnn_polynomial vs attention_polynomial--> Table 1 polynomial distance (trained network)
    --merge--> merged --reorder--> the block layout of Fig. 2B
"""

from __future__ import annotations

import dataclasses

from ..models.attention import LinearSelfAttention
from ..models.gated_rnn import gated_rnn_forward
from .boundary import Network, require
from .lam_groups import LamGroups, lam_groups
from .merging import MERGE_MAX_M, Merged, merge
from .polynomial import attention_polynomial, polynomial_distance, rnn_polynomial
from .pruning import Pruned, output_change, prune
from .reorder import Reordered, reorder
from .scores import gaussian_inputs, score_kv, score_q
from .thresholds import LAM_TOL, PRUNE_TOL


@dataclasses.dataclass(frozen=True)
class ReverseEngineering:
    """Every number and network of the Sec. 4.1 analysis of one trained student."""

    pruned: Pruned
    prune_change: float  # max |y_trained - y_pruned| over the probe batch
    output_scale: float  # max |y_trained| over the probe batch, for scale
    groups: LamGroups  # of the pruned network
    score_kv: float
    score_q: float
    poly_distance: float
    merged: Merged
    reordered: Reordered  # of the merged network
    merge_searched: bool  # False when the pruned network had more than MERGE_MAX_M output neurons

    def summary(self) -> dict[str, float | int]:
        c = self.groups.counts()
        return {
            "hidden after pruning": self.pruned.net.n,
            "output after pruning": self.pruned.net.m,
            "lam > 1 - tol": c["one"],
            "lam < tol": c["zero"],
            "lam in between": c["between"],
            "pruning output change": self.prune_change,
            "Score KV": self.score_kv,
            "Score Q": self.score_q,
            "polynomial distance": self.poly_distance,
            "merged groups": len(self.merged.groups),
            "output after merging": self.merged.net.m,
        }


def reverse_engineer(
    student: Network,
    teacher: LinearSelfAttention,
    *,
    T: int,
    prune_tol: float = PRUNE_TOL,
    lam_tol: float = LAM_TOL,
    batch: int = 256,
    seed: int = 0,
) -> ReverseEngineering:
    """Prune, group, score, compare polynomials, merge and reorder one trained student.

    Scores and output changes use ``batch`` N(0, I) sequences of length T drawn from ``seed``;
    the polynomial distance compares y at step T - 1 exactly. ValueError if the student's d or
    d_out differs from the teacher's d or d_v."""
    require(student, "reverse_engineer")
    if not isinstance(teacher, LinearSelfAttention):
        raise TypeError(f"teacher must be a LinearSelfAttention, got {type(teacher).__name__}")
    if (student.d, student.d_out) != (teacher.d, teacher.d_v):
        raise ValueError(
            f"the student and the teacher differ in size: the student maps d={student.d} to "
            f"d_out={student.d_out}, the teacher d={teacher.d} to d_v={teacher.d_v}"
        )
    x = gaussian_inputs(teacher.d, T, batch, seed)
    pr = prune(student, prune_tol)
    g = lam_groups(pr.net, lam_tol)
    dist = polynomial_distance(rnn_polynomial(student, T), attention_polynomial(teacher, T))
    merge_searched = pr.net.m <= MERGE_MAX_M
    if merge_searched:
        mg = merge(pr.net, rtol=1e-2)
    else:  # too many neurons for the exhaustive search: nothing is merged (and we say so)
        mg = Merged(pr.net, [], [], list(range(pr.net.m)))
    return ReverseEngineering(
        pruned=pr,
        prune_change=output_change(student, pr.net, x),
        output_scale=float(gated_rnn_forward(x, student.params).abs().max()),
        groups=g,
        score_kv=score_kv(pr.net, teacher, x, g.one),
        score_q=score_q(pr.net, teacher, x, g.zero),
        poly_distance=dist,
        merged=mg,
        reordered=reorder(mg.net, lam_tol),
        merge_searched=merge_searched,
    )
