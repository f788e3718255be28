"""Parameter dicts of single gated RNNs, as the analysis functions take them.

The training engine keeps an ensemble's parameters with leading dims *E; the analysis works on one
network at a time. ``member`` picks one network out of an ensemble, ``as_params`` turns a
``GatedRNN`` or a dict into detached float64 tensors (and checks the shapes), ``to_rnn`` builds a
``GatedRNN`` from such a dict.

Glossary (code name -> paper symbol -> section): W_in1, W_in2, nu, W_out1, W_out2, D, W_side as in
gated_rnn.py (Eq. 2, App. A.2).
"""

from __future__ import annotations

import torch

from ..models.gated_rnn import GatedRNN

__all__ = ["as_params", "member", "to_rnn"]

_OUTPUT = ("W_in1", "W_in2", "nu", "W_out1", "W_out2", "D")
_SIDE = ("W_in1", "W_in2", "nu", "W_side", "D")


def as_params(rnn_or_params: GatedRNN | dict) -> dict[str, torch.Tensor]:
    """Detached float64 copies of a single network's parameters, shapes checked.

    Raises TypeError for anything but a GatedRNN or dict, ValueError for missing keys, leading
    ensemble dims or inconsistent shapes.
    """
    if isinstance(rnn_or_params, GatedRNN):
        src = rnn_or_params.params()
    elif isinstance(rnn_or_params, dict):
        src = rnn_or_params
    else:
        raise TypeError(
            f"expected a GatedRNN or a parameter dict, got {type(rnn_or_params).__name__}"
        )
    keys = _SIDE if "W_side" in src else _OUTPUT
    missing = [k for k in keys if k not in src]
    if missing:
        raise ValueError(f"parameter dict lacks {', '.join(missing)} (has {', '.join(src)})")
    p = {k: torch.as_tensor(src[k]).detach().to(torch.float64).clone() for k in keys}
    n = p["nu"].shape[-1]
    if p["nu"].dim() != 1:
        raise ValueError(
            f"nu must have shape (n,), got {tuple(p['nu'].shape)}; pick one network of an "
            "ensemble with analysis.member(params, index)"
        )
    d1 = p["W_in1"].shape[-1]
    expect = {"W_in1": (n, d1), "W_in2": (n, d1)}
    if "W_side" in p:
        expect.update(W_side=(n, d1), D=(p["D"].shape[0], n))
    else:
        m = p["W_out1"].shape[0]
        expect.update(W_out1=(m, n), W_out2=(m, n), D=(p["D"].shape[0], m))
    for k, shape in expect.items():
        if tuple(p[k].shape) != shape:
            raise ValueError(f"{k} must have shape {shape} (n={n}), got {tuple(p[k].shape)}")
    return p


def member(params: dict, index) -> dict[str, torch.Tensor]:
    """One network of an ensemble: ``params[k][index]`` for every k (index: int or tuple)."""
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of tensors, got {type(params).__name__}")
    return {k: torch.as_tensor(v)[index] for k, v in params.items()}


def to_rnn(params: dict, dtype: torch.dtype = torch.float64) -> GatedRNN:
    """A ``GatedRNN`` holding exactly these parameters (nu copied, so lam is exact)."""
    p = as_params(params)
    n, d = p["W_in1"].shape[0], p["W_in1"].shape[1] - 1
    side = "W_side" in p
    m = 0 if side else p["W_out1"].shape[0]
    if not side and m == 0 or n == 0:
        raise ValueError(f"cannot build a GatedRNN with n={n} hidden and m={m} output neurons")
    rnn = GatedRNN(d, n, m if not side else 0, p["D"].shape[0], side=side, dtype=dtype)
    with torch.no_grad():
        for k, v in p.items():
            getattr(rnn, k).copy_(v.to(dtype))
    return rnn
