"""The recurrence values lam split into groups (Sec. 4.1, Fig. 2B).

The construction needs key-value neurons that integrate (lam = 1, state M_t[i, j]) and query
neurons without memory (lam = 0, state q_t[k]); a student that found it has no lam in between.
lam = exp(-exp(nu)) (Eq. 2); ``one``: key-value neurons, ``zero``: query neurons (Sec. 3.1).
"""

from __future__ import annotations

import dataclasses

import torch

from .boundary import Network
from .thresholds import LAM_TOL


@dataclasses.dataclass(frozen=True)
class LamGroups:
    """Indices of the hidden neurons with lam ~ 1, lam ~ 0 and in between, and lam itself."""

    one: list[int]
    zero: list[int]
    between: list[int]
    lam: torch.Tensor

    def counts(self) -> dict[str, int]:
        return {"one": len(self.one), "zero": len(self.zero), "between": len(self.between)}


def lam_groups(net_or_lam: Network | torch.Tensor, tol: float = LAM_TOL) -> LamGroups:
    """Split the hidden neurons by lam: ``one`` (lam > 1 - tol), ``zero`` (lam < tol), ``between``.

    ``net_or_lam``: a ``Network`` or lam (n,)."""
    if not (isinstance(tol, (int, float)) and 0 < tol < 0.5):
        raise ValueError(f"tol must be a number in (0, 0.5), got {tol!r}")
    if isinstance(net_or_lam, Network):
        lam = net_or_lam.lam
    elif isinstance(net_or_lam, torch.Tensor):
        lam = net_or_lam.detach().to(torch.float64)
        if lam.dim() != 1:
            raise ValueError(f"lam must have shape (n,), got {tuple(lam.shape)}")
        if torch.any((lam < 0) | (lam > 1)) or torch.any(torch.isnan(lam)):
            raise ValueError("lam must lie in [0, 1]")
    else:
        raise TypeError(
            f"lam_groups takes an analysis.Network or lam (n,), got {type(net_or_lam).__name__}; "
            "convert a trained network once with analysis.network(x)"
        )
    one = (lam > 1 - tol).nonzero().flatten().tolist()
    zero = (lam < tol).nonzero().flatten().tolist()
    between = ((lam >= tol) & (lam <= 1 - tol)).nonzero().flatten().tolist()
    return LamGroups(one, zero, between, lam)
