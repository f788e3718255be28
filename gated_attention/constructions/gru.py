"""Can a GRU implement linear self-attention? A numeric check of App. B.4's claim (Table 3).

The claim: no GRU does, having no product of two different input projections. One GRU step
(w_z = k, w_n = v, b_iz = beta) multiplies two at second order (``hessian_check``):
h_1 = sigmoid(-beta)(v.u) - sigma'(beta)(k.u)(v.u) + O(|u|^3). Ours: paired units with
delta = sigmoid(-beta) = eps^2 accumulate M_t (``gru_kv_construction``), and two layers approach
M_t q_t with an O(eps^2) error (``gru_two_layer_construction``: 2 d^2 + d units per layer,
readout ~ eps^-4). The argument and the measurements: book/which_rnns_can_be_attention.md,
"GRU (App. B.4)".
"""

from __future__ import annotations

import math

import torch

from ..models.gru import forward as gru_forward
from ..models.gru import gru_states
from ..models.shell import init_linear
from .linearised import attention_output, error_slope, random_inputs, relative_error

CLOSED = 50.0  # z = sigmoid(-50) ~ 2e-22: (1 - z) == 1.0 in float64, no memory

Params = dict[str, torch.Tensor]


def _step(u: torch.Tensor, layer: Params) -> torch.Tensor:
    """h_1 of one GRU step from h_0 = 0 for one input u (H,): (N,)."""
    return gru_states(u[None, None, None], {k: v[None] for k, v in layer.items()})[0, 0, 0]


def _hessian(layer: Params, unit: int, d: int) -> torch.Tensor:
    """d^2 h_1[unit] / du^2 at u = 0, (d, d); Taylor: h_1 = ... + 1/2 u^T Hess u."""
    u0 = torch.zeros(d, dtype=torch.float64)
    return torch.autograd.functional.hessian(lambda u: _step(u, layer)[unit], u0)


def random_gru_cross_terms(d: int = 4, width: int = 8, seed: int = 0) -> float:
    """max |coefficient of u_i u_j| (i != j) in h_1 over all units, PyTorch's random GRU init."""
    g = torch.Generator().manual_seed(seed)
    W_ih, b_ih = init_linear(1, 3 * width, d, g, scale=(d / width) ** 0.5)
    W_hh, b_hh = init_linear(1, 3 * width, width, g)
    layer = {"W_ih": W_ih[0], "W_hh": W_hh[0], "b_ih": b_ih[0], "b_hh": b_hh[0]}
    off = ~torch.eye(d, dtype=torch.bool)
    # Taylor: h_1 = ... + 1/2 u^T Hess u, so the u_i u_j coefficient (i < j) is Hess_ij
    return max(float(_hessian(layer, n, d)[off].abs().max()) for n in range(width))


def hessian_check(v: torch.Tensor, k: torch.Tensor, beta: float = 2.0) -> dict[str, float]:
    """One unit with w_z = k, w_n = v, b_iz = beta, all else 0: Hessian vs -sigma'(beta)(kv^T+vk^T),
    its relative deviation and extreme eigenvalues (of opposite signs)."""
    v, k = v.to(torch.float64), k.to(torch.float64)
    d = v.numel()
    b_z = torch.tensor([beta], dtype=torch.float64)
    H = _hessian(_layer(torch.zeros(1, d, dtype=torch.float64), k[None], v[None], b_z), 0, d)
    s = torch.sigmoid(torch.tensor(beta, dtype=torch.float64))
    target = -s * (1 - s) * (torch.outer(k, v) + torch.outer(v, k))
    eig = torch.linalg.eigvalsh(H)
    return {
        "relative_deviation": float((H - target).abs().max() / target.abs().max()),
        "eig_min": float(eig[0]),
        "eig_max": float(eig[-1]),
    }


def _kv_units(W_V, W_K, eps: float, beta: float, n_in: int):
    """Rows (z, n) of the paired accumulator units: unit 2 (i d_k + j) + {0: s=+1, 1: s=-1}."""
    d_v, d_k = W_V.shape[0], W_K.shape[0]
    W_z = torch.zeros(2 * d_v * d_k, n_in, dtype=torch.float64)
    W_n = torch.zeros_like(W_z)
    for i in range(d_v):
        for j in range(d_k):
            for p, s in enumerate((1.0, -1.0)):
                W_z[2 * (i * d_k + j) + p, : W_K.shape[1]] = s * eps * W_K[j]
                W_n[2 * (i * d_k + j) + p, : W_V.shape[1]] = s * eps * W_V[i]
    return W_z, W_n, torch.full((2 * d_v * d_k,), beta, dtype=torch.float64)


def _pair_scale(eps: float, delta: float) -> float:
    """h_+ + h_- per step ~ -2 sigma'(beta) eps^2 (a b), sigma'(beta) = delta (1 - delta)."""
    return -2.0 * delta * (1.0 - delta) * eps**2


def _layer(W_r, W_z, W_n, b_z, W_hn=None) -> Params:
    """A GRU layer's tensors from its gate rows (r, z, n); biases other than b_iz are 0."""
    N, n_in = W_z.shape
    W_hh = torch.zeros(3 * N, N, dtype=torch.float64)
    if W_hn is not None:
        W_hh[2 * N :] = W_hn
    b_ih = torch.zeros(3 * N, dtype=torch.float64)
    b_ih[N : 2 * N] = b_z
    return {"W_ih": torch.cat([W_r, W_z, W_n]), "W_hh": W_hh, "b_ih": b_ih,
            "b_hh": torch.zeros(3 * N, dtype=torch.float64)}  # fmt: skip


def gru_kv_construction(attention, eps: float, delta: float | None = None) -> Params:
    """1-layer GRU family params (E = 1) whose readout is M_t flattened (d_v d_k, row-major)."""
    delta = eps**2 if delta is None else delta
    W_V, W_K = (w.detach().to(torch.float64) for w in (attention.W_V, attention.W_K))
    d_v, d = W_V.shape
    d_k = W_K.shape[0]
    beta = math.log((1 - delta) / delta)  # sigmoid(-beta) = delta
    W_z, W_n, b_z = _kv_units(W_V, W_K, eps, beta, d)
    layer = _layer(torch.zeros_like(W_z), W_z, W_n, b_z)
    W_o = torch.zeros(d_v * d_k, 2 * d_v * d_k, dtype=torch.float64)
    for m in range(d_v * d_k):
        W_o[m, 2 * m : 2 * m + 2] = 1.0 / _pair_scale(eps, delta)
    params = {"W_e": torch.eye(d, dtype=torch.float64), "b_e": torch.zeros(d, dtype=torch.float64),
              **layer, "W_o": W_o, "b_o": torch.zeros(d_v * d_k, dtype=torch.float64)}  # fmt: skip
    return {k: v[None].clone() for k, v in params.items()}


def gru_kv_error(attention, eps: float, delta: float | None = None, *, B=8, T=32, seed=0) -> float:
    """max |readout - M_t| / max |M_t| of ``gru_kv_construction`` on random Gaussian inputs."""
    x = random_inputs(attention.d, B=B, T=T, seed=seed)
    W_V, W_K = (w.detach().to(torch.float64) for w in (attention.W_V, attention.W_K))
    M = torch.cumsum((x @ W_V.T)[..., :, None] * (x @ W_K.T)[..., None, :], dim=1)
    with torch.no_grad():
        y = gru_forward(x[None], gru_kv_construction(attention, eps, delta))[0]
    return relative_error(y, M.flatten(-2))


def gru_two_layer_construction(attention, eps: float, delta: float | None = None) -> dict:
    """Two stacked GRU layers (width N) and a readout approximating ``attention``: {"layers":
    [layer1, layer2], "W_o": (d_v, N), "b_o": (d_v,)}, each layer PyTorch's tensors (gates r, z, n).
    """
    delta = eps**2 if delta is None else delta
    W_V, W_K, W_Q = (
        w.detach().to(torch.float64) for w in (attention.W_V, attention.W_K, attention.W_Q)
    )
    d_v, d = W_V.shape
    d_k = W_K.shape[0]
    n_kv = 2 * d_v * d_k
    N = n_kv + max(d_k, d_v)  # KV / P units, then query (layer 1) or copy (layer 2) units
    beta = math.log((1 - delta) / delta)  # sigmoid(-beta) = delta: memory
    scale = _pair_scale(eps, delta)

    def rows(n_in: int) -> tuple[list[torch.Tensor], torch.Tensor]:
        zeros = [torch.zeros(N, n_in, dtype=torch.float64) for _ in range(3)]
        return zeros, torch.zeros(N, dtype=torch.float64)

    # layer 1: paired KV accumulators (h_+ + h_- ~ scale M) and query pass-through h ~ eps q
    (W_r, W_z, W_n), b_z = rows(d)
    W_z[:n_kv], W_n[:n_kv], b_z[:n_kv] = _kv_units(W_V, W_K, eps, beta, d)
    W_n[n_kv : n_kv + d_k] = eps * W_Q
    b_z[n_kv : n_kv + d_k] = -CLOSED  # z = 0: h_t = n_t, no memory
    layer1 = _layer(W_r, W_z, W_n, b_z)

    # layer 2: paired accumulators of q_j M[i, j] (P), copy units C_i = sum_j P_{t-1}[i, j]
    (W_r, W_z, W_n), b_z = rows(N)
    W_hn = torch.zeros(N, N, dtype=torch.float64)
    for i in range(d_v):
        for j in range(d_k):
            for p, s in enumerate((1.0, -1.0)):
                unit = 2 * (i * d_k + j) + p
                W_z[unit, n_kv + j] = s  # z = sigmoid(beta + s tanh(eps q_j))
                pair = slice(2 * (i * d_k + j), 2 * (i * d_k + j) + 2)
                W_n[unit, pair] = s * eps / scale  # n = tanh(s eps M[i, j])
                b_z[unit] = beta
                W_hn[n_kv + i, unit] = 2.0  # r = sigmoid(0) = 1/2 halves it back to 1
        b_z[n_kv + i] = -CLOSED
    layer2 = _layer(W_r, W_z, W_n, b_z, W_hn)

    # readout: y_i = (sum_j P_t[i, j] - P_{t-1}[i, j]) / scale
    W_o = torch.zeros(d_v, N, dtype=torch.float64)
    for i in range(d_v):
        W_o[i, 2 * i * d_k : 2 * (i + 1) * d_k] = 1.0 / scale
        W_o[i, n_kv + i] = -1.0 / scale
    return {"layers": [layer1, layer2], "W_o": W_o, "b_o": torch.zeros(d_v, dtype=torch.float64)}


def gru_stack_forward(x: torch.Tensor, stack: dict) -> torch.Tensor:
    """x (B, T, d) through the stacked layers and the readout: (B, T, d_out)."""
    h = x[None]
    for layer in stack["layers"]:
        h = gru_states(h, {k: v[None] for k, v in layer.items()})
    return h[0] @ stack["W_o"].T + stack["b_o"]


def gru_two_layer_error(attention, eps: float, delta: float | None = None, *, B=8, T=32, seed=0):
    """max |y_gru - y_att| / max |y_att| of ``gru_two_layer_construction``."""
    x = random_inputs(attention.d, B=B, T=T, seed=seed)
    with torch.no_grad():
        y = gru_stack_forward(x, gru_two_layer_construction(attention, eps, delta))
    return relative_error(y, attention_output(attention, x))


def gru_findings(attention, eps_values=(1e-2, 3e-3, 1e-3), *, seed: int = 0) -> dict:
    """The measured numbers behind the chapter's GRU findings (delta = eps^2 throughout)."""
    g = torch.Generator().manual_seed(seed)
    v, k = torch.randn(2, attention.d, generator=g, dtype=torch.float64)
    hess = hessian_check(v, k)
    eps = list(eps_values)
    kv = [gru_kv_error(attention, e, seed=seed) for e in eps]
    two = [gru_two_layer_error(attention, e, seed=seed) for e in eps]
    kv_slope, two_slope = error_slope(eps, kv), error_slope(eps, two)

    def converges(errors: list[float], slope: float) -> bool:
        return slope > 1.5 and errors[-1] < 1e-3

    return {
        "random_cross_term_max": random_gru_cross_terms(attention.d, seed=seed),
        "prescribed_product_deviation": hess["relative_deviation"],
        "prescribed_product_eigs": (hess["eig_min"], hess["eig_max"]),
        "eps": eps,
        "kv_errors": kv,
        "kv_slope": kv_slope,
        "two_layer_errors": two,
        "two_layer_slope": two_slope,
        "one_layer_accumulates_M": converges(kv, kv_slope),
        "query_product_achieved": converges(two, two_slope),
        "units_per_layer": gru_two_layer_construction(attention, eps[0])["W_o"].shape[1],
    }
