"""Every recurrent family of Sec. 4.3 / 5.3 by name (``FAMILIES``: gated, dense, lstm, gru, lru,
lru_inout, lru_inout_mlp, mamba; each module's docstring defines it), in the shape the engine
trains. ``family(name)`` returns the ``Family``; ``width_for`` the width whose parameter count is
closest to a target (Fig. 4 compares at matched counts).
"""

from __future__ import annotations

import torch

from .dense_rnn import DENSE
from .fast_path import gated_rnn_fast
from .gated_rnn import GatedRNN, gated_rnn_forward
from .gru import GRU
from .lru import LRU, LRU_IN_OUT, LRU_IN_OUT_MLP
from .lstm import LSTM
from .mamba import MAMBA
from .shell import Family, Params, parameter_count


def _init_gated(d_in, d_out, width, E, generator, dtype=torch.float64) -> Params:
    """E gated RNNs of Eq. (2) with n = m = width, stacked (E, ...); seeds from ``generator``."""
    seeds = torch.randint(0, 2**62, (E,), generator=generator).tolist()
    members = [GatedRNN(d_in, width, width, d_out, seed=s, dtype=torch.float64) for s in seeds]
    names = [k for k, _ in members[0].named_parameters()]
    return {k: torch.stack([getattr(r, k).detach() for r in members]).to(dtype) for k in names}


GATED = Family(
    name="gated",
    label="gated RNN (diagonal)",
    init=_init_gated,
    forward=lambda x, p: gated_rnn_fast(x, p),
    reference=lambda x, p: gated_rnn_forward(x, p, mode="reference"),
    no_decay=("nu",),
)

#: name -> Family, in the order figures list them
FAMILIES: dict[str, Family] = {
    f.name: f for f in (GATED, DENSE, LSTM, GRU, LRU, LRU_IN_OUT, LRU_IN_OUT_MLP, MAMBA)
}


def family(name: str) -> Family:
    """The family called ``name``; an unknown name is a ValueError listing the known ones."""
    if name not in FAMILIES:
        raise ValueError(f"unknown family {name!r}; expected one of {', '.join(FAMILIES)}")
    return FAMILIES[name]


def width_for(fam: Family, d_in: int, d_out: int, target: int, max_width: int = 512) -> int:
    """The width (>= 1) whose parameter count is closest to ``target`` (counts grow with width)."""
    g = torch.Generator().manual_seed(0)
    best, best_gap = 1, None
    for w in range(1, max_width + 1):
        count = parameter_count(fam.init(d_in, d_out, w, 1, g, torch.float64))
        gap = abs(count - target)
        if best_gap is None or gap < best_gap:
            best, best_gap = w, gap
        if count > target:
            break
    return best
