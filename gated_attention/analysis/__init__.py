"""Reverse engineering a trained gated RNN (Sec. 4.1, App. C): is it the construction?

Every function takes a trained network as ONE type, ``Network``: convert once with
``analysis.network(x)``. Modules:
    boundary     Network; network(x), the one conversion; member, one network of an ensemble
    pruning      lossless pruning of dead neurons (Fig. 2A)
    lam_groups   lam ~ 1 / lam ~ 0 / in between (Fig. 2B)
    scores       Score KV and Score Q, 1 - R^2 of linear read-outs (Table 1)
    polynomial   exact input-output polynomials and their distance (Table 1, Table 2)
    merging      merging output-gating neurons with rank-1 summed kernels (App. C.2, Fig. 2C)
    state_spectrum  how many directions a group of neurons uses (ours: near-copies)
    reorder      the construction's layout for the weight figure (Fig. 2B)
    reverse_engineer  the whole Sec. 4.1 pipeline in one call (Fig. 2, Table 1)
    loss_edge    the loss edge of Fig. 3A-C at several levels, one rule for the three panels
    success      per-seed "learned the construction", Wilson intervals, n* from fractions
    thresholds   PRUNE_TOL, LAM_TOL and the memory cuts: one name and one value per idea
    consolidation  a pruned network with surplus neurons as a smaller one, and its cost (ours)
    penalties      the weight penalty |theta|^2, as given and at its best rescaling
    recall_algorithms  reverse engineering associative-recall networks (App. D.3, Fig. 7)
    family_losses  loss per family and parameter count, the scorecard ratios (Fig. 4A/B)
    family_rules   how a Fig. 4A/B row reads a family's seeds, today and under older rules
(the last five are imported as modules, their names not re-exported here)
"""

from .boundary import Network, member, network
from .lam_groups import LamGroups, lam_groups
from .loss_edge import CENTRAL_LEVEL, LEVELS, Edge, edges, loss_edge, median_excess
from .merging import (
    Merged,
    merge,
    merge_error,
    merged_selector_shares,
    output_kernels,
    selector_share,
)
from .polynomial import Polynomial, attention_polynomial, polynomial_distance, rnn_polynomial
from .pruning import Pruned, contributions, output_change, prune
from .reorder import Reordered, reorder
from .reverse_engineer import ReverseEngineering, reverse_engineer
from .scores import gaussian_inputs, reconstruction_score, score_kv, score_q
from .state_spectrum import drop_after, state_spectrum
from .success import (
    Fractions,
    kv_score_unpruned,
    learned,
    transition_by_fraction,
    wilson_interval,
)
from .thresholds import LAM_TOL, MEMORY_LAM_ICL, MEMORY_LAM_RECALL, PRUNE_TOL

__all__ = [
    "PRUNE_TOL",
    "LAM_TOL",
    "MEMORY_LAM_ICL",
    "MEMORY_LAM_RECALL",
    "Network",
    "network",
    "member",
    "Pruned",
    "prune",
    "output_change",
    "contributions",
    "ReverseEngineering",
    "reverse_engineer",
    "CENTRAL_LEVEL",
    "LEVELS",
    "Edge",
    "edges",
    "loss_edge",
    "median_excess",
    "Fractions",
    "kv_score_unpruned",
    "learned",
    "transition_by_fraction",
    "wilson_interval",
    "LamGroups",
    "lam_groups",
    "reconstruction_score",
    "score_kv",
    "score_q",
    "gaussian_inputs",
    "Polynomial",
    "rnn_polynomial",
    "attention_polynomial",
    "polynomial_distance",
    "Merged",
    "merge",
    "merge_error",
    "merged_selector_shares",
    "selector_share",
    "output_kernels",
    "Reordered",
    "reorder",
    "state_spectrum",
    "drop_after",
]
