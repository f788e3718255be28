"""The weight penalty |theta|^2 of a gated RNN (Sec. 4.1's weight decay), as given and at its best
rescaling, the smallest sum over the rescalings that leave the function unchanged:

    W_in1[n] e^(a_n), W_in2[n] e^(b_n), W_out1[m, n] e^(c_m - a_n - b_n),
    W_out2[m, n] e^(e_m - a_n - b_n), D[:, m] e^(-c_m - e_m)
"""

from __future__ import annotations

import torch

from .boundary import Network, require

#: the parameters that weight decay acts on (all but nu, Sec. 4.1)
DECAYED = ("W_in1", "W_in2", "W_out1", "W_out2", "D")


def output_gating(net: Network, where: str) -> Network:
    """``net``, checked to have output gating (W_out1, W_out2); a TypeError names ``where``."""
    if require(net, where).side:
        raise ValueError("consolidation expects output gating (W_out1, W_out2)")
    return net


def weight_penalty(net: Network) -> float:
    """|theta|^2: the sum of squares of every decayed weight (W_in1, W_in2, W_out1, W_out2, D)."""
    p = output_gating(net, "weight_penalty").params
    return float(sum(p[k].square().sum() for k in DECAYED))


def balanced_penalty(net: Network, max_iter: int = 500) -> float:
    """The smallest |theta|^2 over the rescalings of the module docstring (convex in (a, b, c, e);
    L-BFGS from the network as given, so never above ``weight_penalty``)."""
    output_gating(net, "balanced_penalty")
    n, m = net.n, net.m
    i1, i2 = net.W_in1.square().sum(1), net.W_in2.square().sum(1)  # (n,)
    o1, o2, dd = net.W_out1.square(), net.W_out2.square(), net.D.square().sum(0)

    def penalty(z: torch.Tensor) -> torch.Tensor:
        a, b, c, e = z[:n], z[n : 2 * n], z[2 * n : 2 * n + m], z[2 * n + m :]
        s = a + b  # the state of hidden neuron n scales by e^(a_n + b_n)
        return (
            (i1 * torch.exp(2 * a)).sum()
            + (i2 * torch.exp(2 * b)).sum()
            + (o1 * torch.exp(2 * (c[:, None] - s[None, :]))).sum()
            + (o2 * torch.exp(2 * (e[:, None] - s[None, :]))).sum()
            + (dd * torch.exp(-2 * (c + e))).sum()
        )

    z = torch.zeros(2 * n + 2 * m, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        start = float(penalty(z))
    opt = torch.optim.LBFGS(
        [z],
        lr=1.0,
        max_iter=max_iter,
        tolerance_grad=1e-14,
        tolerance_change=1e-16,
        history_size=50,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        loss = penalty(z)
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        best = float(penalty(z))
    return min(best, start)
