"""The LRU block as minimal-LRU (the reference code of Orvieto et al. 2023) defines it, beside
the simplified blocks of ``models.lru`` (ours, beyond the paper; Why:
book/which_rnns_can_be_attention.md, "The real blocks").

Network: embedding u_t = W_emb x_t + b_emb -> L blocks -> readout out_t = W_out u_t + b_out.
One block (layer l), on u_t (H):
    v_t = LayerNorm(u_t) (norm="layer")  or  u_t (norm=None)
    h_t = lam * h_{t-1} + exp(gamma_log) * (B v_t),  h_0 = 0           (complex, N)
    y_t = Re(C h_t) + Dskip * v_t                                       (H)
    g_t = gelu(y_t)                     (the tanh form by default, as the reference's flax gelu)
    u_t <- u_t + (W_1 g_t + b_1) * sigmoid(W_2 g_t + b_2)               GLU and skip connection
lam = exp(-exp(nu) + i exp(theta)) as in ``models.lru``; gamma_log is a free parameter.
LayerNorm (``layer_norm``) is over the H coordinates of one step. The reference's BatchNorm is not
offered: in training it mixes a batch's sequences and steps (not a causal map of one sequence).

Glossary (code name -> symbol -> shape; E members, H = width model size, N = n_hidden):
    W_emb, b_emb            embedding                                     (E, H, d_in), (E, H)
    l{l}_nu, l{l}_theta     lam = exp(-exp(nu) + i exp(theta))                        (E, N)
    l{l}_gamma_log          input normalisation gamma = exp(gamma_log)                (E, N)
    l{l}_B_re, l{l}_B_im    B = B_re + i B_im                                      (E, N, H)
    l{l}_C_re, l{l}_C_im    C = C_re + i C_im                                      (E, H, N)
    l{l}_D                  Dskip                                                     (E, H)
    l{l}_W_1, _b_1, _W_2, _b_2   GLU value and gate branches                (E, H, H), (E, H)
    l{l}_ln_scale, _ln_bias LayerNorm's affine map (norm="layer" only)                (E, H)
    W_out, b_out            readout                                     (E, d_out, H), (E, d_out)

Initialisation: the recurrence as ``models.lru.init_recurrence`` (gamma_log = log sqrt(1 -
|lam|^2)), the dense maps as ``torch.nn.Linear``, LayerNorm scale 1 and bias 0. Constructions:
``constructions.real_blocks``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .lru import drive, gate, init_recurrence, lam_from, layers_of, lru_layer, observe
from .shell import Params, init_linear, linear, member

#: LayerNorm's epsilon (flax's default)
LN_EPS = 1e-6


@dataclass(frozen=True)
class LRUBlockConfig:
    """Blocks, hidden size (None: N = H), normalisation (None or "layer"), GELU form."""

    layers: int = 2
    n_hidden: int | None = None
    norm: str | None = None
    gelu: str = "tanh"

    def __post_init__(self):
        if self.norm not in (None, "layer"):
            raise ValueError(f"norm must be None or 'layer', got {self.norm!r}")
        if self.gelu not in ("tanh", "none"):
            raise ValueError(
                f"gelu must be 'tanh' or 'none' (the exact erf form), got {self.gelu!r}"
            )


def parameter_count_formula(
    d_in: int, d_out: int, width: int, config: LRUBlockConfig = LRUBlockConfig()
) -> int:
    """H (d_in + 1) + d_out (H + 1) + L (4 N H + 3 N + H + 2 H^2 + 2 H) + [norm] 2 L H."""
    H, L = width, config.layers
    N = H if config.n_hidden is None else config.n_hidden
    block = 4 * N * H + 3 * N + H + 2 * H * H + 2 * H + (2 * H if config.norm else 0)
    return H * (d_in + 1) + d_out * (H + 1) + L * block


def init(
    d_in: int,
    d_out: int,
    width: int,
    E: int,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
    *,
    config: LRUBlockConfig = LRUBlockConfig(),
) -> Params:
    """Draw E networks (embedding, ``config.layers`` blocks, readout) in float64."""
    H = width
    N = H if config.n_hidden is None else config.n_hidden
    g = generator
    P: Params = {}
    P["W_emb"], P["b_emb"] = init_linear(E, H, d_in, g)
    for l in range(1, config.layers + 1):
        init_recurrence(P, l, E, H, N, g, gamma_log=True)
        P[f"l{l}_W_1"], P[f"l{l}_b_1"] = init_linear(E, H, H, g)
        P[f"l{l}_W_2"], P[f"l{l}_b_2"] = init_linear(E, H, H, g)
        if config.norm == "layer":
            P[f"l{l}_ln_scale"] = torch.ones(E, H, dtype=torch.float64)
            P[f"l{l}_ln_bias"] = torch.zeros(E, H, dtype=torch.float64)
    P["W_out"], P["b_out"] = init_linear(E, d_out, H, g)
    return {k: v.to(dtype) for k, v in P.items()}


def layer_norm(u: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """(u - mean u) / sqrt(var u + LN_EPS) * scale + bias over the last axis (per member)."""
    centred = u - u.mean(-1, keepdim=True)
    normed = centred / (centred.pow(2).mean(-1, keepdim=True) + LN_EPS).sqrt()
    return normed * member(scale, u) + member(bias, u)


def _in(u: torch.Tensor, P: Params, l: int) -> torch.Tensor:
    """What the LRU of block l reads: LayerNorm(u) or u."""
    if f"l{l}_ln_scale" in P:
        return layer_norm(u, P[f"l{l}_ln_scale"], P[f"l{l}_ln_bias"])
    return u


def _gamma(P: Params, l: int) -> torch.Tensor:
    return torch.exp(P[f"l{l}_gamma_log"])


def forward(x: torch.Tensor, P: Params, gelu: str = "tanh") -> torch.Tensor:
    """The fast form: x (E, B, T, d_in) -> out (E, B, T, d_out)."""
    u = linear(x, P["W_emb"], P["b_emb"])  # (E, B, T, H)
    for l in layers_of(P):
        y = lru_layer(_in(u, P, l), P, l, _gamma(P, l))  # (E, B, T, H)
        u = u + gate(F.gelu(y, approximate=gelu), P, l, "out")  # the GLU of gelu(y)
    return linear(u, P["W_out"], P["b_out"])


def reference(x: torch.Tensor, P: Params, gelu: str = "tanh") -> torch.Tensor:
    """The definition, the whole network stepped one t at a time."""
    E, B, T, _ = x.shape
    layers = layers_of(P)
    lam = {l: lam_from(P[f"l{l}_nu"], P[f"l{l}_theta"])[:, None, :] for l in layers}
    h = {l: torch.zeros_like(lam[l]).expand(E, B, -1) for l in layers}  # (E, B, N) complex
    outs = []
    for t in range(T):
        u = linear(x[:, :, t], P["W_emb"], P["b_emb"])  # (E, B, H)
        for l in layers:
            v = _in(u, P, l)
            h[l] = lam[l] * h[l] + drive(v, P, l, _gamma(P, l))
            u = u + gate(F.gelu(observe(h[l], v, P, l), approximate=gelu), P, l, "out")
        outs.append(linear(u, P["W_out"], P["b_out"]))
    return torch.stack(outs, dim=2)
