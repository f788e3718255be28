"""How many directions a group of hidden neurons uses: neurons can be near-copies (ours).

Why: book/teacher_identification.md, "Surplus neurons or surplus directions?". For a group:

    S        the (B T, k) matrix of the group's states h_t (Eq. 2) over a batch, all steps, not
             centred (a constant state is a direction of its own)
    s_i      the singular values of S divided by the largest: 1 = s_1 >= ... >= s_k >= 0
    drop     s_c / s_(c+1), c the construction's count of the group (d(d+1)/2 key-value, d query
             neurons); no threshold: read it against the construction's own spectrum
"""

from __future__ import annotations

import torch

from .boundary import Network, require
from .scores import neuron_states


def state_spectrum(net: Network, x: torch.Tensor, neurons) -> torch.Tensor:
    """s_1 = 1 >= s_2 >= ... of the states of ``neurons`` on inputs x (B, T, d); (k,) float64.

    An empty group gives an empty tensor; a group whose states are all zero gives zeros."""
    S = neuron_states(require(net, "state_spectrum"), x, neurons, "group")  # (B T, k)
    if S.shape[1] == 0:
        return torch.zeros(0, dtype=torch.float64)
    s = torch.linalg.svdvals(S)
    return s / s[0] if float(s[0]) > 0 else torch.zeros_like(s)


def drop_after(spectrum: torch.Tensor, count: int) -> float | None:
    """s_count / s_(count+1): inf for an exact copy, None when the group has <= count neurons."""
    if count < 1:
        raise ValueError(f"count must be a positive integer, got {count}")
    if spectrum.numel() <= count:
        return None
    below = float(spectrum[count])
    return float("inf") if below == 0.0 else float(spectrum[count - 1]) / below
