"""The LRU family of Sec. 4.3 / 5.3 (Fig. 4), arXiv:2309.01775v2: the linear recurrent unit of
Orvieto et al. (2023) with output GLU (2 stacked layers), the paper's "LRU In+Out" (an input GLU
as well, 1 layer) and its App. B.1 ablation with both GLUs replaced by MLPs of equal size.

Glossary (code name -> paper symbol -> shape), layer l in {1, 2}, H = N = width:
    W_emb, b_emb        linear embedding u_t = W_emb x_t + b_emb                    (H, d_in), (H)
    l{l}_nu, l{l}_theta lam = exp(-exp(nu) + i exp(theta)), the complex diagonal recurrence  (N)
    gamma               sqrt(1 - |lam|^2) = sqrt(-expm1(-2 exp(nu))), input normalisation   (N)
    l{l}_B_re, l{l}_B_im  B = B_re + i B_im, input matrix                                (N, H)
    l{l}_C_re, l{l}_C_im  C = C_re + i C_im, output matrix                               (H, N)
    l{l}_D              Dskip, the elementwise skip of the layer input                     (H)
    l{l}_W_1, _b_1, _W_2, _b_2   output GLU  o_t = (W_1 y_t + b_1) * sigmoid(W_2 y_t + b_2)  (H, H)
    l{l}_W_3, _b_3, _W_4, _b_4   input GLU   v_t = (W_3 u_t + b_3) * sigmoid(W_4 u_t + b_4)  (H, H)
    l{l}_mlp_{in,out}_W1, _b1, _W2, _b2   the MLP replacing a GLU: W2 gelu(W1 z + b1) + b2
                                          (M, H), (M), (H, M), (H), hidden size M = H
    W_out, b_out        linear readout                                           (d_out, H), (d_out)

One block (LRU layer with its gates, applied to u_t (H)):
    v_t = u_t  (LRU)    or  input GLU / input MLP of u_t  (LRU In+Out / its MLP ablation)
    h_t = lam * h_{t-1} + gamma * (B v_t),  h_0 = 0                      (complex, N)
    y_t = Re(C h_t) + Dskip * v_t                                         (H)
    o_t = output GLU (or output MLP) of y_t                               (H)
    u_t <- u_t + o_t                                                      residual connection
No normalisation in the block (it would make the map non-polynomial).

Families (embedding -> block(s) -> readout, Sec. 4.3) and parameters of one member:
    LRU             2 blocks with output GLU only     12 H^2 + 10 H + H (d_in + 1) + d_out (H + 1)
    LRU_IN_OUT      1 block, input and output GLU      8 H^2 +  7 H + H (d_in + 1) + d_out (H + 1)
    LRU_IN_OUT_MLP  1 block, both GLUs -> MLPs          the same as LRU_IN_OUT, exactly
Per block: recurrence 4 N H + 2 N + H, each GLU (or MLP at M = H) 2 H^2 + 2 H.

Forms: ``forward`` (all t at once with the complex decay matrix L[t, s] = lam^(t-s), lam^k in
closed form; T <= 33 here), ``forward_real`` (the same in real arithmetic, for ``torch.compile``,
which does not fuse complex operations), ``reference`` (a loop over t). Parameters are real; the
complex numbers are formed on the fly.

Departures from the reference code (minimal-LRU: no GELU, no normalisation, gamma tied to nu,
weight decay on B): the chapter which_rnns_can_be_attention lists them. The real block is
``models.lru_block``.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F

from .gated_rnn import NU_MAX, lagged  # nu and theta are clamped to NU_MAX
from .shell import Family, Params, compile_loop, init_linear, linear, member

#: Ring initialisation (Orvieto et al. 2023, Sec. 3.3): |lam|^2 ~ U(r_min^2, r_max^2), phase
#: ~ U(0, max_phase). r_min = 0: the construction needs lam ~ 0 and lam ~ 1 neurons; r_max = 0.99
#: keeps gamma >= 0.14; max_phase = pi/10 as the LRU paper (the target needs real lam).
R_MIN, R_MAX, MAX_PHASE = 0.0, 0.99, math.pi / 10


def lam_from(nu: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """lam = exp(-exp(nu) + i exp(theta)): (*, N) real -> (*, N) complex, |lam| in [0, 1]."""
    return torch.exp(_log_lam(nu, theta))


def _log_lam(nu: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    nu, theta = nu.clamp(-NU_MAX, NU_MAX), theta.clamp(-NU_MAX, NU_MAX)
    return torch.complex(-torch.exp(nu), torch.exp(theta))


def gamma_from_nu(nu: torch.Tensor) -> torch.Tensor:
    """gamma = sqrt(1 - |lam|^2) with expm1, accurate as |lam| -> 1 (nu = -40: 2.9e-9, not 0)."""
    return torch.sqrt(-torch.expm1(-2 * torch.exp(nu.clamp(-NU_MAX, NU_MAX))))


def decay_matrix(nu: torch.Tensor, theta: torch.Tensor, T: int) -> torch.Tensor:
    """L[e, t, s, n] = lam^(t-s) for s <= t, else 0: nu, theta (E, N) -> (E, T, T, N) complex;
    exp(k log lam), exact at lam = 0 and lam = 1."""
    k = torch.arange(T, device=nu.device, dtype=nu.dtype)
    powers = torch.exp(k[None, :, None] * _log_lam(nu, theta)[:, None, :])  # (E, T, N)
    return lagged(powers)  # (E, T, T, N)


def drive(v: torch.Tensor, P: Params, l: int, gamma: torch.Tensor | None = None) -> torch.Tensor:
    """gamma * (B v): v (E, ..., H) real -> (E, ..., N) complex; gamma (E, N), None:
    ``gamma_from_nu`` of layer l's nu."""
    Bv = torch.complex(linear(v, P[f"l{l}_B_re"]), linear(v, P[f"l{l}_B_im"]))
    gamma = gamma_from_nu(P[f"l{l}_nu"]) if gamma is None else gamma
    return member(gamma, v) * Bv


def observe(h: torch.Tensor, v: torch.Tensor, P: Params, l: int) -> torch.Tensor:
    """y = Re(C h) + Dskip * v = C_re Re(h) - C_im Im(h) + Dskip * v: (E, ..., H) real."""
    Ch = linear(h.real, P[f"l{l}_C_re"]) - linear(h.imag, P[f"l{l}_C_im"])
    return Ch + member(P[f"l{l}_D"], v) * v


def lru_layer(v: torch.Tensor, P: Params, l: int = 1, gamma=None) -> torch.Tensor:
    """One LRU recurrence (layer l), all steps at once: v (E, B, T, H) -> y (E, B, T, H)
    (``gamma`` as for ``drive``)."""
    w = drive(v, P, l, gamma)  # (E, B, T, N)
    L = decay_matrix(P[f"l{l}_nu"], P[f"l{l}_theta"], v.shape[-2])  # (E, T, T, N)
    h = torch.einsum("etsn,ebsn->ebtn", L, w)  # (E, B, T, N)
    return observe(h, v, P, l)


def decay_parts(nu: torch.Tensor, theta: torch.Tensor, T: int) -> torch.Tensor:
    """``decay_matrix`` in real arithmetic: nu, theta (E, N) -> L (E, T, 2, T, N), L[:, t, 0, s]
    = Re lam^(t-s), L[:, t, 1, s] = Im lam^(t-s) for s <= t, else 0; exact at lam = 0 and 1."""
    k = torch.arange(T, device=nu.device, dtype=nu.dtype)[None, :, None]  # (1, T, 1)
    modulus = torch.exp(k * -torch.exp(nu.clamp(-NU_MAX, NU_MAX))[:, None, :])  # (E, T, N)
    angle = k * torch.exp(theta.clamp(-NU_MAX, NU_MAX))[:, None, :]
    powers = torch.stack([modulus * torch.cos(angle), modulus * torch.sin(angle)], dim=1)
    return lagged(powers).transpose(1, 2)  # (E, 2, T, T, N) -> (E, T, 2, T, N)


def lru_layer_real(v: torch.Tensor, P: Params, l: int = 1) -> torch.Tensor:
    """``lru_layer`` in real arithmetic (``forward_real``): v (E, B, T, H) -> y (E, B, T, H)."""
    N = P[f"l{l}_nu"].shape[-1]
    B = torch.cat([P[f"l{l}_B_re"], P[f"l{l}_B_im"]], dim=1)  # (E, 2N, H)
    gamma = gamma_from_nu(P[f"l{l}_nu"]).repeat(1, 2)  # (E, 2N)
    w = (linear(v, B) * member(gamma, v)).unflatten(-1, (2, N))  # (E, B, T, 2, N): re, im
    L = decay_parts(P[f"l{l}_nu"], P[f"l{l}_theta"], v.shape[-2])  # (E, T, 2, T, N)
    r = torch.einsum("etcsn,ebsdn->ebtcdn", L, w)  # r[..., c, d, :] = sum_s L_c w_d
    h = torch.cat([r[..., 0, 0, :] - r[..., 1, 1, :], r[..., 0, 1, :] + r[..., 1, 0, :]], -1)
    C = torch.cat([P[f"l{l}_C_re"], -P[f"l{l}_C_im"]], dim=2)  # (E, H, 2N): y = Re(C h)
    return linear(h, C) + member(P[f"l{l}_D"], v) * v


def glu(z: torch.Tensor, W_a, b_a, W_g, b_g) -> torch.Tensor:
    """(W_a z + b_a) * sigmoid(W_g z + b_g), per member: z (E, ..., H) -> (E, ..., H)."""
    return linear(z, W_a, b_a) * torch.sigmoid(linear(z, W_g, b_g))


def mlp(z: torch.Tensor, W1, b1, W2, b2) -> torch.Tensor:
    """W2 gelu(W1 z + b1) + b2 (exact, erf GELU), per member: z (E, ..., H) -> (E, ..., H)."""
    return linear(F.gelu(linear(z, W1, b1)), W2, b2)


def mlp_hidden_size(H: int) -> int:
    """Hidden size M of the MLP H -> M -> H with the parameters of a GLU H -> H: 2 H M + M + H =
    2 H^2 + 2 H iff M = H."""
    return round((2 * H * H + H) / (2 * H + 1))


#: the parameter names of a block's input GLU (W_3 ... b_4) and output GLU (W_1 ... b_2)
_GLU_NAMES = {"in": ("W_3", "b_3", "W_4", "b_4"), "out": ("W_1", "b_1", "W_2", "b_2")}


def glu_joint(z: torch.Tensor, W_a, b_a, W_g, b_g) -> torch.Tensor:
    """``glu`` with both branches in one product ([W_a; W_g]): the same map, fewer kernels."""
    a, g = linear(z, torch.cat([W_a, W_g], dim=1), torch.cat([b_a, b_g], dim=1)).chunk(2, -1)
    return a * torch.sigmoid(g)


def gate(z: torch.Tensor, P: Params, l: int, where: str, joint: bool = False) -> torch.Tensor:
    """The block's input ("in") or output ("out") map of z: GLU (``joint``: ``glu_joint``), MLP,
    or identity (no input GLU)."""
    W = _GLU_NAMES[where]
    if f"l{l}_{W[0]}" in P:
        return (glu_joint if joint else glu)(z, *(P[f"l{l}_{k}"] for k in W))
    if f"l{l}_mlp_{where}_W1" in P:
        return mlp(z, *(P[f"l{l}_mlp_{where}_{k}"] for k in ("W1", "b1", "W2", "b2")))
    if where == "in":
        return z
    raise KeyError(f"layer {l} has neither an output GLU nor an output MLP")


def layers_of(P: Params) -> list[int]:
    """The block indices present in the parameters (1, or 1 and 2)."""
    layers = []
    while f"l{len(layers) + 1}_nu" in P:
        layers.append(len(layers) + 1)
    return layers


def forward(x: torch.Tensor, P: Params) -> torch.Tensor:
    """The fast form of every LRU family (told apart by the parameter names): x (E, B, T, d_in)
    -> y (E, B, T, d_out)."""
    u = linear(x, P["W_emb"], P["b_emb"])  # (E, B, T, H)
    for l in layers_of(P):
        v = gate(u, P, l, "in")  # (E, B, T, H)
        u = u + gate(lru_layer(v, P, l), P, l, "out")
    return linear(u, P["W_out"], P["b_out"])  # (E, B, T, d_out)


def forward_real(x: torch.Tensor, P: Params) -> torch.Tensor:
    """``forward`` in real arithmetic (``lru_layer_real``, ``glu_joint``), for a compiled step."""
    u = linear(x, P["W_emb"], P["b_emb"])
    for l in layers_of(P):
        v = gate(u, P, l, "in", joint=True)
        u = u + gate(lru_layer_real(v, P, l), P, l, "out", joint=True)
    return linear(u, P["W_out"], P["b_out"])


def reference(x: torch.Tensor, P: Params) -> torch.Tensor:
    """The definition, stepped one t at a time through every block: x (E, B, T, d_in) -> y."""
    E, B, T, _ = x.shape
    layers = layers_of(P)
    lam = {l: lam_from(P[f"l{l}_nu"], P[f"l{l}_theta"])[:, None, :] for l in layers}  # (E, 1, N)
    h = {l: torch.zeros_like(lam[l]).expand(E, B, -1) for l in layers}  # (E, B, N) complex
    ys = []
    for t in range(T):
        u = linear(x[:, :, t], P["W_emb"], P["b_emb"])  # (E, B, H)
        for l in layers:
            v = gate(u, P, l, "in")
            h[l] = lam[l] * h[l] + drive(v, P, l)
            u = u + gate(observe(h[l], v, P, l), P, l, "out")
        ys.append(linear(u, P["W_out"], P["b_out"]))  # (E, B, d_out)
    return torch.stack(ys, dim=2)


def closed_form_count(name: str, d_in: int, d_out: int, width: int) -> int:
    """Trainable parameters of one member of family ``name`` (see the module docstring)."""
    H = width
    shell = H * (d_in + 1) + d_out * (H + 1)
    if name == "lru":
        return 12 * H * H + 10 * H + shell
    if name in ("lru_inout", "lru_inout_mlp"):
        return 8 * H * H + 7 * H + shell
    raise ValueError(f"unknown LRU family {name!r}")


def init_recurrence(
    P: Params,
    l: int,
    E: int,
    H: int,
    N: int,
    g: torch.Generator,
    *,
    gamma_log: bool = False,
) -> None:
    """Layer l's recurrence into P, float64: the ring init of nu, theta (``gamma_log``: a free
    l{l}_gamma_log = log sqrt(1 - |lam|^2), for ``models.lru_block``), then B, C, Dskip at the
    LRU paper's scales: E|B_nh|^2 = 1/H, E|C_hn|^2 = 2/N, Dskip ~ N(0, 1)."""
    mod2 = torch.rand(E, N, generator=g, dtype=torch.float64) * (R_MAX**2 - R_MIN**2) + R_MIN**2
    P[f"l{l}_nu"] = torch.log(-0.5 * torch.log(mod2)).clamp(-NU_MAX, NU_MAX)  # |lam|^2 = mod2
    phase = torch.rand(E, N, generator=g, dtype=torch.float64) * MAX_PHASE
    P[f"l{l}_theta"] = torch.log(phase).clamp(-NU_MAX, NU_MAX)
    if gamma_log:
        P[f"l{l}_gamma_log"] = 0.5 * torch.log1p(-mod2)
    for part, rows, cols, std in (("B", N, H, (2 * H) ** -0.5), ("C", H, N, N**-0.5)):
        for kind in ("re", "im"):
            draw = torch.randn(E, rows, cols, generator=g, dtype=torch.float64)
            P[f"l{l}_{part}_{kind}"] = draw * std
    P[f"l{l}_D"] = torch.randn(E, H, generator=g, dtype=torch.float64)


def _init(d_in, d_out, width, E, g, dtype=torch.float64, *, layers: int, maps: tuple) -> Params:
    """Embedding, ``layers`` blocks with (input, output) maps ``maps``, readout; float64 draws;
    width = H = N."""
    H = width
    P: Params = {}
    P["W_emb"], P["b_emb"] = init_linear(E, H, d_in, g)
    for l in range(1, layers + 1):
        init_recurrence(P, l, E, H, H, g)
        for where, kind in zip(("in", "out"), maps, strict=True):
            if kind == "glu":  # value branch W_a and gate branch W_g, both H -> H
                W_a, b_a, W_g, b_g = (f"l{l}_{k}" for k in _GLU_NAMES[where])
                P[W_a], P[b_a] = init_linear(E, H, H, g)
                P[W_g], P[b_g] = init_linear(E, H, H, g)
            elif kind == "mlp":  # H -> M -> H
                M, key = mlp_hidden_size(H), f"l{l}_mlp_{where}_"
                P[key + "W1"], P[key + "b1"] = init_linear(E, M, H, g)
                P[key + "W2"], P[key + "b2"] = init_linear(E, H, M, g)
    P["W_out"], P["b_out"] = init_linear(E, d_out, H, g)
    return {k: v.to(dtype) for k, v in P.items()}


def _family(name: str, label: str, layers: int, maps: tuple) -> Family:
    """One LRU family of the module docstring: ``layers`` blocks with (input, output) maps
    ``maps``; nu and theta without weight decay; ``forward_real`` compiled on its first call,
    one per family (each with its own graphs)."""
    no_decay = tuple(f"l{l}_{k}" for l in range(1, layers + 1) for k in ("nu", "theta"))
    init = functools.partial(_init, layers=layers, maps=maps)
    return Family(
        name, label, init, forward, reference, no_decay, compiled=compile_loop(forward_real)
    )


LRU = _family("lru", "LRU (2 layers)", 2, (None, "glu"))
LRU_IN_OUT = _family("lru_inout", "LRU In+Out", 1, ("glu", "glu"))
LRU_IN_OUT_MLP = _family("lru_inout_mlp", "LRU In+Out (MLP)", 1, ("mlp", "mlp"))
