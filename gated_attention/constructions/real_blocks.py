"""Weights with which the *real* Mamba and LRU blocks (``models.mamba_block``,
``models.lru_block``) compute causal linear self-attention y_t = M_t q_t (Eq. 1; ours, beyond
the paper, whose Table 3 constructions are for simplified blocks). Why, and what each costs:
book/which_rnns_can_be_attention.md, "The real blocks".

Odd pairs (eq-which-odd-pair): f(s) - f(-s) = s exactly for f = silu, gelu (erf or tanh form),
softplus, so two channels fed u and -u, read as a difference, pass u through f exactly.
    Mamba, ``bias=True``  exact: channels [v; -v; x; -x], identity conv tap, B_t = k_t and
        C_t = q_t from the +-x channels, Delta0 = 1, A_log = -inf, gate z = 1
    Mamba as released     exact: channel (i, j, s1, s2, s3), s in {+1, -1}, xs = silu(s2 v_i),
        Delta = softplus(s1 k_j), gate silu(s3 q_j); A = 0, B_t = C_t = silu(1) from a constant
        channel; out_i = sum_{j, s} s1 s2 s3 y / silu(1)^2. torch's softplus returns s above
        s = 20: the softplus pair is off by e^-s <= 2e-9 for |k_j| > 20
    LRU, 2 blocks         ``constructions.lru``'s with every GELU input in odd pairs and gamma = 1:
        O(eps^2); with LayerNorm (``norm="layer"``, stream at scale delta) + O(delta^2 / ln_eps).
        Never exact: along x -> a x its output grows at most as a, attention's as a^3 (``growth``)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..models.attention import LinearSelfAttention
from ..models.lru import NU_MAX
from ..models.lru_block import LN_EPS, LRUBlockConfig
from ..models.lru_block import forward as lru_block_forward
from ..models.lru_block import init as lru_block_init
from ..models.mamba_block import MambaBlockConfig
from ..models.mamba_block import forward as mamba_block_forward
from ..models.mamba_block import init as mamba_block_init
from .linearised import attention_output, random_inputs, relative_error
from .lru import pair_units, products

Params = dict[str, torch.Tensor]

#: the predicted log-log slope of the LRU block's error against eps (and against delta)
SLOPE = 2.0


def odd_pair_gaps(s: torch.Tensor) -> dict[str, float]:
    """max |f(s) - f(-s) - s| over the entries of s, for SiLU, both GELUs and softplus."""
    maps = {
        "silu": F.silu,
        "gelu (erf)": F.gelu,
        "gelu (tanh)": lambda u: F.gelu(u, approximate="tanh"),
        "softplus": F.softplus,
    }
    return {name: float((f(s) - f(-s) - s).abs().max()) for name, f in maps.items()}


def symbolic_odd_pairs() -> dict[str, object]:
    """f(s) - f(-s) - s by sympy for SiLU, both GELUs and softplus, and "8 channels": sum over the
    sign triples of s1 s2 s3 softplus(s1 a) silu(s2 b) silu(s3 c) - a b c; all 0 if they hold."""
    import sympy as sp

    s, a, b, c = sp.symbols("s a b c", real=True)
    maps = {
        "silu": lambda u: u / (1 + sp.exp(-u)),
        "gelu (erf)": lambda u: u * (1 + sp.erf(u / sp.sqrt(2))) / 2,
        "gelu (tanh)": lambda u: (
            u * (1 + sp.tanh(sp.sqrt(2 / sp.pi) * (u + sp.Rational(44715, 10**6) * u**3))) / 2
        ),
        "softplus": lambda u: sp.log(1 + sp.exp(u)),
    }

    def simplify(e):
        return sp.simplify(sp.expand_log(sp.simplify(e.rewrite(sp.exp)), force=True))

    out = {name: simplify(f(s) - f(-s) - s) for name, f in maps.items()}
    silu, softplus = maps["silu"], maps["softplus"]
    signs = [(x, y, z) for x in (1, -1) for y in (1, -1) for z in (1, -1)]
    total = sum(x * y * z * softplus(x * a) * silu(y * b) * silu(z * c) for x, y, z in signs)
    out["8 channels"] = sp.simplify(sp.expand_log(sp.factor(total), force=True) - a * b * c)
    return out


def growth(forward, params: Params, x: torch.Tensor, scales) -> list[float]:
    """max |forward(a x)| / a for each a in ``scales`` (x: (B, T, d), one member): attention's
    grows as a^2, a network at most linear along rays stays bounded."""
    with torch.no_grad():
        return [float(forward(a * x[None], params).abs().max()) / a for a in scales]


def _weights(attention: LinearSelfAttention, dtype: torch.dtype):
    W_V, W_K, W_Q = (w.detach().to(dtype) for w in (attention.W_V, attention.W_K, attention.W_Q))
    return W_V, W_K, W_Q, W_V.shape[1], W_V.shape[0], W_K.shape[0]


def mamba_block_size(d: int, d_v: int, d_k: int, *, bias: bool = False) -> dict[str, int]:
    """Inner channels D, states N and dt_rank R of ``mamba_block_construction``."""
    if bias:
        return {"D": 2 * d_v + 2 * d, "N": d_k, "R": 1}
    return {"D": 8 * d_v * d_k + 2 * d_k + 1, "N": 1, "R": d_k}


def _zero_block(d: int, d_v: int, size: dict, bias: bool, dtype) -> Params:
    config = MambaBlockConfig(n_state=size["N"], dt_rank=size["R"], bias=bias)
    P = mamba_block_init(
        d, d_v, size["D"], 1, torch.Generator().manual_seed(0), dtype, config=config
    )
    P = {k: torch.zeros_like(v) for k, v in P.items()}
    P["A_log"].fill_(-math.inf)  # A = 0: exp(Delta A) = 1, a perfect memory
    P["w_conv"][0, :, -1] = 1.0  # the identity tap (current step), conv bias 0
    if bias:  # constant Delta and gate
        P["b_dt"][0] = math.log(math.e - 1)  # softplus^-1(1): Delta = 1
        P["b_in"][0, size["D"] :] = 1.0  # z = 1
    return P


def mamba_block_construction(
    attention: LinearSelfAttention, *, bias: bool = False, dtype: torch.dtype = torch.float64
) -> Params:
    """Parameters (E = 1) of the Mamba block (``bias``: with biases in its projections) that
    compute ``attention`` exactly."""
    W_V, W_K, W_Q, d, d_v, d_k = _weights(attention, dtype)
    size = mamba_block_size(d, d_v, d_k, bias=bias)
    D, N, R = size["D"], size["N"], size["R"]
    P = _zero_block(d, d_v, size, bias, dtype)
    W_in, W_x = P["W_in"][0], P["W_x"][0]
    eye = torch.eye(d, dtype=dtype)
    if bias:  # channels [v; -v; x; -x]; B = k, C = q; constant Delta and gate
        W_in[:D] = torch.cat([W_V, -W_V, eye, -eye])
        xp, xm = 2 * d_v + torch.arange(d), 2 * d_v + d + torch.arange(d)
        W_x[R : R + N, xp], W_x[R : R + N, xm] = W_K, -W_K
        W_x[R + N :, xp], W_x[R + N :, xm] = W_Q, -W_Q
        scale = 1 / (F.softplus(P["b_dt"][0, 0]) * F.silu(torch.tensor(1.0, dtype=dtype)))
        i = torch.arange(d_v)
        P["W_out"][0, i, i], P["W_out"][0, i, d_v + i] = scale, -scale
        return P
    # no bias: channel (i, j, s1, s2, s3) at index 8 (i d_k + j) + 4 a + 2 b + c, s = (-1)^bit
    idx = torch.arange(8 * d_v * d_k)
    pair, bits = torch.div(idx, 8, rounding_mode="floor"), idx % 8
    i, j = torch.div(pair, d_k, rounding_mode="floor"), pair % d_k
    s1, s2, s3 = (1 - 2 * (torch.div(bits, m, rounding_mode="floor") % 2) for m in (4, 2, 1))
    s1, s2, s3 = (s.to(dtype) for s in (s1, s2, s3))
    W_in[idx] = s2[:, None] * W_V[i]  # xs = silu(s2 v_i)
    W_in[D + idx] = s3[:, None] * W_Q[j]  # gate silu(s3 q_j)
    kp, km, one = 8 * d_v * d_k + torch.arange(d_k), 8 * d_v * d_k + d_k + torch.arange(d_k), D - 1
    W_in[kp], W_in[km] = W_K, -W_K  # channels +-k: delta_t = xs_k+ - xs_k- = k_t
    P["w_conv"][0, one, -1], P["b_conv"][0, one] = 0.0, 1.0  # the constant channel silu(1)
    W_x[torch.arange(R), kp], W_x[torch.arange(R), km] = 1.0, -1.0
    W_x[R, one], W_x[R + 1, one] = 1.0, 1.0  # B_t = C_t = silu(1)
    P["W_dt"][0, idx, j] = s1  # Delta = softplus(s1 k_j), b_dt = 0
    c = F.silu(torch.tensor(1.0, dtype=dtype))
    P["W_out"][0, i, idx] = s1 * s2 * s3 / (c * c)
    return P


def transplanted_mamba_construction(
    attention: LinearSelfAttention, *, dtype: torch.dtype = torch.float64
) -> Params:
    """Table 3's construction (``constructions.mamba``) moved as it is into the real block with
    biases, without odd pairs: the SiLU after the convolution bends every channel, so it fails."""
    W_V, W_K, W_Q, d, d_v, d_k = _weights(attention, dtype)
    size = {"D": d_v + d, "N": d_k, "R": 1}
    D, N, R = size["D"], size["N"], size["R"]
    P = _zero_block(d, d_v, size, True, dtype)
    P["W_in"][0, :D] = torch.cat([W_V, torch.eye(d, dtype=dtype)])
    P["W_x"][0, R : R + N, d_v:], P["W_x"][0, R + N :, d_v:] = W_K, W_Q
    scale = 1 / (F.softplus(P["b_dt"][0, 0]) * F.silu(torch.tensor(1.0, dtype=dtype)))
    P["W_out"][0, torch.arange(d_v), torch.arange(d_v)] = scale
    return P


def _inputs(attention: LinearSelfAttention, T: int, seed: int) -> torch.Tensor:
    """8 seeded N(0, I) sequences of length T (``random_inputs``) in the attention's dtype."""
    return random_inputs(attention.d, T=T, seed=seed).to(attention.W_V.dtype)


def mamba_block_error(
    attention: LinearSelfAttention, params: Params | None = None, *, bias: bool = False
) -> float:
    """max |out - y_att| / max |y_att| over ``_inputs`` of length 32, seed 0 (float64);
    ``params`` defaults to ``mamba_block_construction(attention, bias=bias)``."""
    if params is None:
        params = mamba_block_construction(attention, bias=bias)
    x = _inputs(attention, 32, 0)
    with torch.no_grad():
        return relative_error(
            mamba_block_forward(x[None], params)[0], attention_output(attention, x)
        )


def lru_block_size(d: int, d_v: int, d_k: int) -> dict[str, int]:
    """Width H and hidden size N of ``lru_block_construction`` (2 blocks)."""
    n = d_v * d_k
    return {"H": max(2 * d + 4 * n, 2 * n + 2 * d_k), "N": n + d_k}


def lru_block_construction(
    attention: LinearSelfAttention,
    eps: float,
    *,
    norm: str | None = None,
    delta: float = 1.0,
    dtype: torch.dtype = torch.float64,
) -> Params:
    """Parameters (E = 1) of 2 LRU blocks that compute ``attention`` up to O(eps^2) (and
    O(delta^2 / ln_eps) with ``norm="layer"``); a ValueError for delta != 1 without it."""
    W_V, W_K, W_Q, d, d_v, d_k = _weights(attention, dtype)
    n = d_v * d_k
    size = lru_block_size(d, d_v, d_k)
    H, N = size["H"], size["N"]
    if norm is None and delta != 1.0:
        raise ValueError("delta (the residual stream's scale) is for norm='layer' only")
    config = LRUBlockConfig(layers=2, n_hidden=N, norm=norm)
    P = lru_block_init(d, d_v, H, 1, torch.Generator().manual_seed(0), dtype, config=config)
    P = {k: torch.zeros_like(v) for k, v in P.items()}
    for l in (1, 2):
        P[f"l{l}_nu"].fill_(NU_MAX)  # lam = 0 exactly; gamma_log = 0: gamma = 1
        if norm == "layer":
            P[f"l{l}_ln_scale"].fill_(math.sqrt(LN_EPS) / delta)  # undoes the scale delta
    eye = torch.eye(d, dtype=dtype)
    P["W_emb"][0, : 2 * d] = delta * torch.cat([eye, -eye])  # u = delta [x; -x; 0]
    pm = torch.zeros(d, H, dtype=dtype)  # reads gelu(x) - gelu(-x) = x from [x; -x; ...]
    pm[:, :d], pm[:, d : 2 * d] = eye, -eye
    idx = torch.arange(n)
    i, j = torch.div(idx, d_k, rounding_mode="floor"), idx % d_k
    # block 1: recurrence off (B = 0), y = Dskip v = [x; -x; 0]; GLU pairs v_i sigmoid(+-eps k_j)
    P["l1_D"][0, : 2 * d] = 1.0
    prod1 = pair_units(2 * d, n)
    products(P, "l1_W_1", "l1_W_2", prod1, delta * (W_V[i] @ pm), W_K[j] @ pm, eps)
    # block 2: key-value neurons (lam -> 1, gamma = 1) read (2/eps)(plus - minus) / delta;
    # query neurons (lam = 0) read (x - (-x)) / 2 = x
    P["l2_nu"][0, :n], P["l2_theta"][0, :n] = -NU_MAX, -NU_MAX
    plus, minus = prod1
    P["l2_B_re"][0, idx, plus], P["l2_B_re"][0, idx, minus] = 2 / eps, -2 / eps
    P["l2_B_re"][0, n:] = W_Q @ pm / 2
    # y2 = Re(C h) = [M; -M; q; -q] for the GELU pairs; GLU pairs M_ij sigmoid(+-eps q_j)
    k = torch.arange(d_k)
    P["l2_C_re"][0, idx, idx], P["l2_C_re"][0, n + idx, idx] = 1.0, -1.0
    P["l2_C_re"][0, 2 * n + k, n + k], P["l2_C_re"][0, 2 * n + d_k + k, n + k] = 1.0, -1.0
    a, g = torch.zeros(n, H, dtype=dtype), torch.zeros(n, H, dtype=dtype)
    a[idx, idx], a[idx, n + idx] = 1.0, -1.0
    g[idx, 2 * n + j], g[idx, 2 * n + d_k + j] = 1.0, -1.0
    prod2 = pair_units(2 * d + 2 * n, n)
    products(P, "l2_W_1", "l2_W_2", prod2, delta * a, g, eps)
    plus, minus = prod2
    P["W_out"][0, i, plus], P["W_out"][0, i, minus] = 2 / eps / delta, -2 / eps / delta
    return P


def lru_block_error(
    attention: LinearSelfAttention,
    eps: float,
    *,
    norm: str | None = None,
    delta: float = 1.0,
    gelu: str = "tanh",
    T: int = 32,
    seed: int = 0,
) -> float:
    """Relative error of ``lru_block_construction`` on ``_inputs`` of length T."""
    P = lru_block_construction(attention, eps, norm=norm, delta=delta)
    x = _inputs(attention, T, seed)
    with torch.no_grad():
        y = lru_block_forward(x[None], P, gelu=gelu)[0]
    return relative_error(y, attention_output(attention, x))
