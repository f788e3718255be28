"""The gated RNN of Eq. (2) with a *dense* linear recurrence (Sec. 4.3, "dense" in Fig. 4A).

Glossary (code name -> paper symbol -> shape, E ensemble members, n = m = width):
    x_tilde  x~_t = [x_t; 1], the input with a constant 1 appended (no biases)     (E, B, T, d+1)
    W_in1    first input-gating matrix W_in1                                         (E, n, d+1)
    W_in2    second input-gating matrix W_in2                                        (E, n, d+1)
    u        g_in(x~_t) = (W_in1 x~_t) * (W_in2 x~_t), input gating                  (E, B, T, n)
    A        the dense recurrence matrix: h_t = A h_{t-1} + u_t, h_0 = 0             (E, n, n)
    W_out1   first output-gating matrix W_out1                                       (E, m, n)
    W_out2   second output-gating matrix W_out2                                      (E, m, n)
    D        readout: y_t = D g_out(h_t), g_out(h) = (W_out1 h) * (W_out2 h)         (E, d_out, m)

No separate embedding (it would only re-parametrise W_in1 and W_in2). A gets no weight decay (as
nu in Sec. 4.1) and no stability parametrisation. Forms: ``reference`` loops over t; ``forward``
solves the recurrence by doubling (``dense_scan``).
"""

from __future__ import annotations

import torch

from .shell import Family, Params, linear


def init(
    d_in: int,
    d_out: int,
    width: int,
    E: int,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float64,
) -> Params:
    """Draw E members: W_* ~ N(0, 1/fan_in), A = diag(lam) with lam ~ U(0, 1)."""
    n = m = width

    def normal(*shape: int, fan_in: int) -> torch.Tensor:
        w = torch.randn(E, *shape, generator=generator, dtype=torch.float64) / fan_in**0.5
        return w.to(dtype)

    W_in1 = normal(n, d_in + 1, fan_in=d_in + 1)
    W_in2 = normal(n, d_in + 1, fan_in=d_in + 1)
    lam = torch.rand(E, n, generator=generator, dtype=torch.float64)
    A = torch.diag_embed(lam).to(dtype)  # (E, n, n): diagonal at init, dense once trained
    W_out1 = normal(m, n, fan_in=n)
    W_out2 = normal(m, n, fan_in=n)
    D = normal(d_out, m, fan_in=m)
    return {"W_in1": W_in1, "W_in2": W_in2, "A": A, "W_out1": W_out1, "W_out2": W_out2, "D": D}


def parameter_count_formula(d_in: int, d_out: int, width: int) -> int:
    """2 w (d_in + 1) + 3 w^2 + d_out w: W_in1, W_in2, A, W_out1, W_out2, D."""
    w = width
    return 2 * w * (d_in + 1) + 3 * w * w + d_out * w


def dense_scan(u: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
    """h_t = A h_{t-1} + u_t (h_0 = 0) for all t: u (E, B, T, n), A (E, n, n) -> (E, B, T, n).
    After the doubling step with shift s, h_t holds sum_{t-2s < r <= t} A^(t-r) u_r."""
    T = u.shape[2]
    h, P, s = u, A, 1  # P = A^s
    while s < T:
        # h_t += A^s h_{t-s} for t >= s; the first s steps are already complete.
        shifted = linear(h[:, :, :-s], P)  # (E, B, T - s, n)
        h = torch.cat([h[:, :, :s], h[:, :, s:] + shifted], dim=2)
        P, s = torch.bmm(P, P), 2 * s
    return h


def forward(x: torch.Tensor, params: Params) -> torch.Tensor:
    """The fast form: x (E, B, T, d_in) -> y (E, B, T, d_out)."""
    W1, W2 = params["W_in1"], params["W_in2"]
    a = linear(x, W1[..., :-1], W1[..., -1])  # the last column reads the constant 1
    b = linear(x, W2[..., :-1], W2[..., -1])
    h = dense_scan(a * b, params["A"])  # (E, B, T, n)
    g = linear(h, params["W_out1"]) * linear(h, params["W_out2"])  # (E, B, T, m)
    return linear(g, params["D"])


def reference(x: torch.Tensor, params: Params) -> torch.Tensor:
    """The definition, a loop over t: h = A h + g_in(x~_t); y_t = D g_out(h_t)."""
    E, B, T, _ = x.shape
    W1, W2, A = params["W_in1"], params["W_in2"], params["A"]
    ones = x.new_ones(E, B, 1)
    h = x.new_zeros(E, B, A.shape[-1])  # (E, B, n)
    ys = []
    for t in range(T):
        x_tilde = torch.cat([x[:, :, t], ones], dim=-1)  # (E, B, d+1)
        u = (x_tilde @ W1.transpose(1, 2)) * (x_tilde @ W2.transpose(1, 2))  # (E, B, n)
        h = h @ A.transpose(1, 2) + u
        g = (h @ params["W_out1"].transpose(1, 2)) * (h @ params["W_out2"].transpose(1, 2))
        ys.append(g @ params["D"].transpose(1, 2))  # (E, B, d_out)
    return torch.stack(ys, dim=2)


DENSE = Family(
    name="dense",
    label="gated RNN (dense)",
    init=init,
    forward=forward,
    reference=reference,
    no_decay=("A",),
)
