"""LRU weights that implement causal linear self-attention, y_t = M_t q_t (Eq. 1; Table 3,
App. B.1): the 2-layer LRU and the 1-layer LRU In+Out of ``models.lru``.

Glossary (pairs p = (i, j), p = i d_k + j, n = d_v d_k; why: book/which_rnns_can_be_attention.md):
    eps         the small gate scale that linearises the GLU's sigmoid: error O(eps^2) (``SLOPE``)
    pair_units  the GLU units (plus, minus) of pair p, a_p z * sigmoid(+-eps g_p z); the next linear
                map takes (2 / eps)(plus - minus) = a_p z (1 - eps^2 z^2 / 12 + O(eps^4))
    nu_one, theta_one   the key-value neurons' nu, theta: lam -> 1 only as they -> -inf (at -40,
                |lam| rounds to 1.0) and gamma -> 0, so B's rows carry 1/gamma; nu = NU_MAX = +40
                gives lam = 0 and gamma = 1 exactly

Coordinates (the blocks are residual, u <- u + o, so each writer gets coordinates of its own):
    2-layer LRU (H >= d + 4 n): u = [x; 0]; layer 1's GLU writes v_i sigmoid(+-eps k_j) on
        d .. d + 2n; layer 2 (n key-value neurons, d_k query neurons) has y2 = Re(C h) = [M; q; 0]
        and its GLU writes M_ij sigmoid(+-eps q_j) on d + 2n .. d + 4n; y_i = (2/eps) sum_j
        (plus - minus).
    LRU In+Out (H >= max(d, d_k) + 2 n): the input GLU writes the products on 0 .. 2n and
        q_k / 2 on 2n + k (zero gate: sigmoid(0) = 1/2), the query neurons read it with B = 2;
        the output GLU writes on d .. d + 2n; readout as above.
"""

from __future__ import annotations

import torch

from ..models.attention import LinearSelfAttention
from ..models.lru import LRU, LRU_IN_OUT, NU_MAX, gamma_from_nu
from ..models.shell import Family
from .linearised import relative_error

Params = dict[str, torch.Tensor]

#: the predicted log-log slope of the relative error against eps
SLOPE = 2.0


def pair_units(offset: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The coordinates (plus, minus) of the n GLU unit pairs written from ``offset`` on."""
    plus = offset + 2 * torch.arange(n)
    return plus, plus + 1


def _weights(attention: LinearSelfAttention):
    W_V, W_K, W_Q = (w.detach() for w in (attention.W_V, attention.W_K, attention.W_Q))
    d_v, d = W_V.shape
    d_k = W_K.shape[0]
    i, j = torch.div(torch.arange(d_v * d_k), d_k, rounding_mode="floor"), torch.arange(d_k)
    return W_V, W_K, W_Q, d, d_v, d_k, i, j.repeat(d_v)  # i, j: the pair p's (row, column)


def _zeros(family: Family, d: int, d_v: int, H: int, need: int, dtype) -> Params:
    """Parameters of one member (E = 1), all zero but u = [x; 0] (W_emb) and every lam = 0."""
    if H < need:
        raise ValueError(f"width must be at least {need} for this attention layer, got {H}")
    shapes = family.init(d, d_v, H, 1, torch.Generator().manual_seed(0), dtype)
    P = {k: torch.zeros_like(v) for k, v in shapes.items()}
    for k in P:
        if k.endswith("_nu"):
            P[k].fill_(NU_MAX)  # lam = 0 exactly in float64, gamma = 1
    P["W_emb"][0, :d, :d] = torch.eye(d, dtype=dtype)
    return P


def products(P: Params, W_a: str, W_g: str, units, a: torch.Tensor, g: torch.Tensor, eps):
    """GLU units plus_p, minus_p = (a_p z) sigmoid(+-eps g_p z); a, g: (n, H) rows (b = 0)."""
    plus, minus = units
    P[W_a][0, plus], P[W_a][0, minus] = a, a
    P[W_g][0, plus], P[W_g][0, minus] = eps * g, -eps * g


def _memory(P: Params, l: int, n: int, read, nu_one: float, theta_one: float, eps: float):
    """Key-value neurons 0 .. n-1 of layer l: lam -> 1, h_p = sum_t (2/eps)(plus - minus)."""
    plus, minus = read
    P[f"l{l}_nu"][0, :n], P[f"l{l}_theta"][0, :n] = nu_one, theta_one
    scale = 2 / eps / gamma_from_nu(P[f"l{l}_nu"][0, :n])  # the 1/gamma undoes gamma -> 0
    rows = torch.arange(n)
    P[f"l{l}_B_re"][0, rows, plus], P[f"l{l}_B_re"][0, rows, minus] = scale, -scale


def _output(P: Params, l: int, H: int, n: int, d_k: int, i, j, units, eps: float):
    """Layer l's output GLU, pair p = (i, j): M_ij sigmoid(+-eps q_j), reading y = Re(C h) =
    [M; q; 0] (Dskip = 0), and the readout y_i = (2/eps) sum_j (plus - minus)."""
    p = torch.arange(n)
    a, g = torch.zeros(n, H, dtype=P["W_out"].dtype), torch.zeros(n, H, dtype=P["W_out"].dtype)
    a[p, p], g[p, n + j] = 1.0, 1.0
    products(P, f"l{l}_W_1", f"l{l}_W_2", units, a, g, eps)
    diag = torch.arange(n + d_k)
    P[f"l{l}_C_re"][0, diag, diag] = 1.0
    plus, minus = units
    P["W_out"][0, i, plus], P["W_out"][0, i, minus] = 2 / eps, -2 / eps


def lru_construction(
    attention: LinearSelfAttention,
    eps: float,
    *,
    width: int | None = None,
    nu_one: float = -NU_MAX,
    theta_one: float = -NU_MAX,
) -> Params:
    """Parameters (E = 1) of the 2-layer ``LRU`` that implement ``attention`` up to O(eps^2);
    width (H = N) defaults to the least the layout needs, d + 4 d_v d_k."""
    W_V, W_K, W_Q, d, d_v, d_k, i, j = _weights(attention)
    n = d_v * d_k
    H = d + 4 * n if width is None else width
    P = _zeros(LRU, d, d_v, H, max(d + 4 * n, n + d_k), W_V.dtype)
    # layer 1: recurrence off (B = 0), y1 = Dskip * u = [x; 0]; its GLU makes the products
    P["l1_D"][0, :d] = 1.0
    prod1 = pair_units(d, n)
    a, g = torch.zeros(n, H, dtype=W_V.dtype), torch.zeros(n, H, dtype=W_V.dtype)
    a[:, :d], g[:, :d] = W_V[i], W_K[j]
    products(P, "l1_W_1", "l1_W_2", prod1, a, g, eps)  # u2 = [x; v_i sigmoid(+-eps k_j); 0]
    # layer 2: key-value neurons accumulate M, query neurons (lam = 0, gamma = 1) hold q
    _memory(P, 2, n, prod1, nu_one, theta_one, eps)
    P["l2_B_re"][0, n : n + d_k, :d] = W_Q
    _output(P, 2, H, n, d_k, i, j, pair_units(d + 2 * n, n), eps)
    return P


def lru_inout_construction(
    attention: LinearSelfAttention,
    eps: float,
    *,
    width: int | None = None,
    nu_one: float = -NU_MAX,
    theta_one: float = -NU_MAX,
) -> Params:
    """Parameters (E = 1) of the 1-layer ``LRU_IN_OUT`` that implement ``attention`` up to
    O(eps^2); width defaults to the least the layout needs, max(d, d_k) + 2 d_v d_k."""
    W_V, W_K, W_Q, d, d_v, d_k, i, j = _weights(attention)
    n = d_v * d_k
    need = max(d, d_k) + 2 * n
    H = need if width is None else width
    P = _zeros(LRU_IN_OUT, d, d_v, H, need, W_V.dtype)
    # input GLU: products on 0 .. 2n; q_k / 2 on 2n + k (zero gate: sigmoid(0) = 1/2 exactly)
    prod_in = pair_units(0, n)
    a, g = torch.zeros(n, H, dtype=W_V.dtype), torch.zeros(n, H, dtype=W_V.dtype)
    a[:, :d], g[:, :d] = W_V[i], W_K[j]
    products(P, "l1_W_3", "l1_W_4", prod_in, a, g, eps)
    P["l1_W_3"][0, 2 * n : 2 * n + d_k, :d] = W_Q
    # key-value neurons accumulate M; query neurons (lam = 0, gamma = 1) read 2 (q / 2) = q
    _memory(P, 1, n, prod_in, nu_one, theta_one, eps)
    k = torch.arange(d_k)
    P["l1_B_re"][0, n + k, 2 * n + k] = 2.0
    # the output pairs are disjoint from u's x part: the residual adds nothing there
    _output(P, 1, H, n, d_k, i, j, pair_units(d, n), eps)
    return P


def construction_error(
    family: Family,
    P: Params,
    attention: LinearSelfAttention,
    *,
    T: int = 16,
    batch: int = 32,
    seed: int = 0,
) -> float:
    """max |y - y_att| / max |y_att| on a seeded batch of N(0, I) sequences (attention's dtype)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, T, attention.d, generator=g, dtype=attention.W_V.dtype)
    with torch.no_grad():
        return relative_error(family.forward(x[None], P)[0], attention(x))


def lru_error(attention: LinearSelfAttention, eps: float) -> float:
    """``construction_error`` of ``lru_construction(attention, eps)``."""
    return construction_error(LRU, lru_construction(attention, eps), attention)


def lru_inout_error(attention: LinearSelfAttention, eps: float) -> float:
    """``construction_error`` of ``lru_inout_construction(attention, eps)``."""
    return construction_error(LRU_IN_OUT, lru_inout_construction(attention, eps), attention)
