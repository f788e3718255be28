"""The whole reverse-engineering pipeline of Sec. 4.1 in one call (Fig. 2, Table 1).

    trained student --prune--> pruned --lam_groups--> key-value / query neurons
        --score_kv, score_q--> Table 1 scores      (on the pruned network)
        --rnn_polynomial vs attention_polynomial--> Table 1 polynomial distance (trained network)
        --merge--> merged --reorder--> the block layout of Fig. 2B

Glossary (code name -> paper symbol -> section): see the modules this one calls.
"""

from __future__ import annotations

import dataclasses

from ..models.attention import LinearSelfAttention
from ..models.gated_rnn import GatedRNN, gated_rnn_forward
from .lam_groups import LamGroups, lam_groups
from .merging import Merged, merge
from .params import as_params
from .polynomial import attention_polynomial, polynomial_distance, rnn_polynomial
from .pruning import Pruned, output_change, prune
from .reorder import Reordered, reorder
from .scores import gaussian_inputs, score_kv, score_q
from .thresholds import LAM_TOL, PRUNE_TOL

__all__ = ["ReverseEngineering", "reverse_engineer", "MERGE_MAX_M"]

#: merging searches all groups of up to 3 output neurons: only for pruned networks this small
MERGE_MAX_M = 40


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
    merge_change: float
    reordered: Reordered  # of the merged network
    merge_searched: bool  # False when the pruned network had more than MERGE_MAX_M output neurons

    def summary(self) -> dict[str, float | int]:
        c = self.groups.counts()
        return {
            "hidden after pruning": self.pruned.rnn.n,
            "output after pruning": self.pruned.rnn.m,
            "lam > 1 - tol": c["one"],
            "lam < tol": c["zero"],
            "lam in between": c["between"],
            "pruning output change": self.prune_change,
            "Score KV": self.score_kv,
            "Score Q": self.score_q,
            "polynomial distance": self.poly_distance,
            "merged groups": len(self.merged.groups),
            "output after merging": self.merged.rnn.m,
        }


def reverse_engineer(
    student: GatedRNN | dict,
    teacher: LinearSelfAttention,
    *,
    T: int,
    prune_tol: float = PRUNE_TOL,
    lam_tol: float = LAM_TOL,
    merge_rtol: float = 1e-2,
    batch: int = 256,
    seed: int = 0,
) -> ReverseEngineering:
    """Prune, group, score, compare polynomials, merge and reorder one trained student.

    The scores and output changes use ``batch`` fresh N(0, I) sequences of length T drawn from
    ``seed``; the polynomial distance compares y at step T - 1 (all T inputs) exactly.
    """
    p = as_params(student)
    x = gaussian_inputs(teacher.d, T, batch, seed)
    pr = prune(p, prune_tol)
    g = lam_groups(pr.rnn, lam_tol)
    skv = score_kv(pr.rnn, teacher, x, g.one)
    sq = score_q(pr.rnn, teacher, x, g.zero)
    dist = polynomial_distance(rnn_polynomial(p, T), attention_polynomial(teacher, T))
    merge_searched = pr.rnn.m <= MERGE_MAX_M
    if merge_searched:
        mg = merge(pr.rnn, rtol=merge_rtol)
    else:  # too many neurons for the exhaustive search: nothing is merged (and we say so)
        mg = Merged(pr.rnn, [], [], list(range(pr.rnn.m)))
    ro = reorder(mg.rnn, lam_tol)
    scale = float(gated_rnn_forward(x, p).abs().max())
    return ReverseEngineering(
        pruned=pr,
        prune_change=output_change(p, pr.rnn, x),
        output_scale=scale,
        groups=g,
        score_kv=skv,
        score_q=sq,
        poly_distance=dist,
        merged=mg,
        merge_change=output_change(pr.rnn, mg.rnn, x),
        reordered=ro,
        merge_searched=merge_searched,
    )
