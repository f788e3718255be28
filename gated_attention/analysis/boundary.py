"""One trained network as every analysis function takes it, converted once at the boundary.

``Network``: the weights of Eq. (2) as detached float64 tensors, shapes checked, every entry
finite (a diverged network is refused, its bad tensors named). Every analysis function that reads
a network takes one (else a TypeError says how to convert); prune, merge, reorder, consolidate and
``net.subnetwork`` (some neurons, in any order) return one; ``net.rnn()`` builds a GatedRNN again.

    net = analysis.network(student)          # a GatedRNN, or one network's parameter dict
    net = analysis.network(analysis.member(result.params, e))   # member e of an ensemble

Glossary (code name -> paper symbol -> shape), as in models/gated_rnn.py (Eq. 2, App. A.2):
    W_in1, W_in2    input gating                                  (n, d+1)
    nu              lam = exp(-exp(nu)), the diagonal recurrence  (n,)
    W_out1, W_out2  output gating (None for side gating)          (m, n)
    W_side          side gating, App. A.2 (None: output gating)   (n, d+1)
    D               read-out                                      (d_out, m), side: (d_out, n)
    n, m, d, d_out  hidden, output-gating (0 for side gating) neurons; input, output dimension
"""

from __future__ import annotations

import dataclasses

import torch

from ..models.gated_rnn import GatedRNN, lam_from_nu

_OUTPUT = ("W_in1", "W_in2", "nu", "W_out1", "W_out2", "D")
_SIDE = ("W_in1", "W_in2", "nu", "W_side", "D")
F64 = torch.float64


@dataclasses.dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class Network:
    """One gated RNN's weights, output or side gating: build it with ``network(x)``; read-only."""

    W_in1: torch.Tensor
    W_in2: torch.Tensor
    nu: torch.Tensor
    D: torch.Tensor
    W_out1: torch.Tensor | None = None
    W_out2: torch.Tensor | None = None
    W_side: torch.Tensor | None = None

    def __post_init__(self) -> None:
        side = self.W_side is not None
        if side and (self.W_out1 is not None or self.W_out2 is not None):
            raise ValueError("a network has either W_side (side gating) or W_out1, W_out2")
        for k in _SIDE if side else _OUTPUT:
            v = getattr(self, k)
            if v is None:
                raise ValueError(f"the network lacks {k}")
            if not isinstance(v, torch.Tensor) or v.dtype != F64 or v.requires_grad:
                object.__setattr__(self, k, torch.as_tensor(v).detach().to(F64))
        _check_shapes(self.params)
        _check_finite(self.params)

    @classmethod
    def of(cls, x: GatedRNN | dict | Network) -> Network:
        """A GatedRNN or one network's parameter dict -> a Network (copied; a Network as it is).

        Raises TypeError for anything else, ValueError for missing keys, leading ensemble dims,
        inconsistent shapes or non-finite weights."""
        if isinstance(x, Network):
            return x
        if isinstance(x, GatedRNN):
            src = x.params()
        elif isinstance(x, dict):
            src = x
        else:
            raise TypeError(
                f"analysis.network takes a GatedRNN or one network's parameter dict, "
                f"got {type(x).__name__}"
            )
        keys = _SIDE if "W_side" in src else _OUTPUT
        missing = [k for k in keys if k not in src]
        if missing:
            raise ValueError(f"parameter dict lacks {', '.join(missing)} (has {', '.join(src)})")
        return cls(**{k: torch.as_tensor(src[k]).detach().to(F64).clone() for k in keys})

    @property
    def side(self) -> bool:
        """True for side gating (W_side), False for output gating (W_out1, W_out2)."""
        return self.W_side is not None

    @property
    def n(self) -> int:
        return self.nu.shape[0]

    @property
    def m(self) -> int:
        """Output-gating neurons; 0 for side gating."""
        return 0 if self.W_out1 is None else self.W_out1.shape[0]

    @property
    def d(self) -> int:
        return self.W_in1.shape[1] - 1

    @property
    def d_out(self) -> int:
        return self.D.shape[0]

    @property
    def lam(self) -> torch.Tensor:
        """lam = exp(-exp(nu)), (n,)."""
        return lam_from_nu(self.nu)

    @property
    def params(self) -> dict[str, torch.Tensor]:
        """The tensors as the dict ``gated_rnn_forward`` takes (the same tensors, not copies)."""
        keys = _SIDE if self.side else _OUTPUT
        return {k: getattr(self, k) for k in keys}

    def rnn(self) -> GatedRNN:
        """A fresh float64 ``GatedRNN`` holding exactly these weights (nu copied: lam is exact)."""
        if self.n == 0 or (not self.side and self.m == 0):
            raise ValueError(f"cannot build a GatedRNN with n={self.n} and m={self.m} neurons")
        rnn = GatedRNN(self.d, self.n, self.m, self.d_out, side=self.side, dtype=F64)
        with torch.no_grad():
            for k, v in self.params.items():
                getattr(rnn, k).copy_(v)
        return rnn

    def subnetwork(self, hidden, output=None) -> Network:
        """Hidden neurons ``hidden``, output neurons ``output`` (default all), in that order."""
        h = torch.as_tensor(hidden, dtype=torch.long)
        q = {"W_in1": self.W_in1[h], "W_in2": self.W_in2[h], "nu": self.nu[h]}
        if self.side:
            return Network(**q, W_side=self.W_side[h], D=self.D[:, h])
        o = torch.arange(self.m) if output is None else torch.as_tensor(output, dtype=torch.long)
        W_out1, W_out2 = self.W_out1[o][:, h], self.W_out2[o][:, h]
        return Network(**q, W_out1=W_out1, W_out2=W_out2, D=self.D[:, o])

    def __repr__(self) -> str:
        gating = "side" if self.side else f"m={self.m}"
        return f"Network(d={self.d}, n={self.n}, {gating}, d_out={self.d_out})"


def _check_shapes(p: dict[str, torch.Tensor]) -> None:
    if p["nu"].dim() != 1:
        raise ValueError(
            f"nu must have shape (n,), got {tuple(p['nu'].shape)}; pick one network of an "
            "ensemble with analysis.member(params, index)"
        )
    n, d1 = p["nu"].shape[0], p["W_in1"].shape[-1]
    expect = {"W_in1": (n, d1), "W_in2": (n, d1)}
    if "W_side" in p:
        expect.update(W_side=(n, d1), D=(p["D"].shape[0], n))
    else:
        m = p["W_out1"].shape[0]
        expect.update(W_out1=(m, n), W_out2=(m, n), D=(p["D"].shape[0], m))
    for k, shape in expect.items():
        if tuple(p[k].shape) != shape:
            raise ValueError(f"{k} must have shape {shape} (n={n}), got {tuple(p[k].shape)}")


def _check_finite(p: dict[str, torch.Tensor]) -> None:
    """ValueError naming every tensor with NaN or inf entries, and how many."""
    bad = []
    for k, v in p.items():
        counts = (("NaN", int(v.isnan().sum())), ("inf", int(v.isinf().sum())))
        parts = [f"{c} {what} {'entry' if c == 1 else 'entries'}" for what, c in counts if c]
        if parts:
            bad.append(f"{k} has {' and '.join(parts)}")
    if bad:
        raise ValueError(f"non-finite weights: {', '.join(bad)}; the network diverged in training")


#: the boundary: a GatedRNN or one network's parameter dict -> a Network
network = Network.of


def require(net, where: str) -> Network:
    """``net`` if it is a Network, else a TypeError telling the caller how to convert."""
    if not isinstance(net, Network):
        raise TypeError(
            f"{where} takes an analysis.Network, got {type(net).__name__}; convert a trained "
            "network once with analysis.network(x) (a GatedRNN or one network's parameter dict)"
        )
    return net


def member(params: dict, index) -> dict[str, torch.Tensor]:
    """One network of an ensemble: ``params[k][index]`` for every k (index: int or tuple)."""
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of tensors, got {type(params).__name__}")
    return {k: torch.as_tensor(v)[index] for k, v in params.items()}
