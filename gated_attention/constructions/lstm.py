"""A 1-layer LSTM that implements linear self-attention in the limit eps -> 0 (Table 4, App. B.3).

The LSTM (``models.lstm``, PyTorch's gates): c_t = f_t * c_{t-1} + i_t * g_t, h_t = o_t * tanh(c_t),
y_t = W_o h_t; here u_t = x_t (W_e = I), W_hh = 0, and four cells per entry (i, j) of M_t, one per
pair of signs (a, b) in {+1, -1}^2 (N = 4 d_v d_k):
    input gate   i = sigmoid(a eps k_j)          k = W_K x_t
    candidate    g = tanh(a eps v_i)             v = W_V x_t
    forget gate  f = sigmoid(FORGET_BIAS) = 1
    output gate  o = sigmoid(b eps q_j)          q = W_Q x_t
    readout      W_o[i, (i, j, a, b)] = b * 4 / eps^3
The sign pairs cancel the even Taylor terms: y = M_t q_t up to a relative O(eps^2), whose largest
part grows with T (why: book/which_rnns_can_be_attention.md, "LSTM").
"""

from __future__ import annotations

import torch

from ..models.attention import LinearSelfAttention
from ..models.lstm import forward as lstm_forward
from .linearised import attention_output, random_inputs, relative_error

#: sigmoid(50) == 1.0 exactly in float64 (1 - sigmoid(50) ~ 2e-22 < 2^-53): perfect memory
FORGET_BIAS = 50.0

SIGNS = ((1, 1), (1, -1), (-1, 1), (-1, -1))  # (a, b): input pair sign a, output pair sign b


def lstm_construction(
    attention: LinearSelfAttention,
    eps: float,
    *,
    forget_bias: float = FORGET_BIAS,
    dtype: torch.dtype = torch.float64,
) -> dict[str, torch.Tensor]:
    """Parameters (ensemble E = 1) of the LSTM family approximating ``attention`` as eps -> 0."""
    W_V, W_K, W_Q = (w.detach().to(dtype) for w in (attention.W_V, attention.W_K, attention.W_Q))
    d_v, d = W_V.shape
    d_k = W_K.shape[0]
    N = 4 * d_v * d_k
    W_i, W_g, W_oq = (torch.zeros(N, d, dtype=dtype) for _ in range(3))
    W_o = torch.zeros(d_v, N, dtype=dtype)
    for i in range(d_v):
        for j in range(d_k):
            for p, (a, b) in enumerate(SIGNS):
                n = 4 * (i * d_k + j) + p  # the cell of entry (i, j), sign pair p
                W_i[n] = a * eps * W_K[j]  # input gate ~ 1/2 + a eps k_j / 4
                W_g[n] = a * eps * W_V[i]  # candidate ~ a eps v_i
                W_oq[n] = b * eps * W_Q[j]  # output gate ~ 1/2 + b eps q_j / 4
                W_o[i, n] = b * 4.0 / eps**3
    W_ih = torch.cat([W_i, torch.zeros(N, d, dtype=dtype), W_g, W_oq])  # order i, f, g, o
    b_ih = torch.zeros(4 * N, dtype=dtype)
    b_ih[N : 2 * N] = forget_bias  # f = sigmoid(forget_bias) -> 1: perfect memory
    params = {
        "W_e": torch.eye(d, dtype=dtype),
        "b_e": torch.zeros(d, dtype=dtype),
        "W_ih": W_ih,
        "W_hh": torch.zeros(4 * N, N, dtype=dtype),
        "b_ih": b_ih,
        "b_hh": torch.zeros(4 * N, dtype=dtype),
        "W_o": W_o,
        "b_o": torch.zeros(d_v, dtype=dtype),
    }
    return {k: v[None].clone() for k, v in params.items()}  # the ensemble dim, E = 1


def lstm_error(
    attention: LinearSelfAttention,
    eps: float,
    params: dict[str, torch.Tensor] | None = None,
    *,
    seed: int = 0,
    **construction_kwargs,
) -> float:
    """max |y_lstm - y_att| / max |y_att| over the 8 sequences of 32 steps of ``random_inputs``;
    ``params`` defaults to ``lstm_construction(attention, eps, **construction_kwargs)``."""
    if params is None:
        params = lstm_construction(attention, eps, **construction_kwargs)
    x = random_inputs(attention.d, seed=seed)
    with torch.no_grad():
        y = lstm_forward(x[None], params)[0]
    return relative_error(y, attention_output(attention, x))
