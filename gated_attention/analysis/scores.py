"""Score KV and Score Q: can the key-values and queries be read linearly from the states? (Table 1)

Score = 1 - R^2 of the least-squares regression (with intercept) from a group of hidden states h_t
(Eq. 2) to a target, over all sequences and steps of a batch:

    Score KV: states of the lam ~ 1 neurons  ->  the flattened teacher M_t = sum_{t'<=t} v_t' k_t'^T
    Score Q:  states of the lam ~ 0 neurons  ->  the teacher's query q_t = W_Q x_t     (Eq. 1)

Both are 0 for the construction (its states are M_t and q_t, or an invertible linear image of
them) and close to 1 when the group holds nothing useful.
"""

from __future__ import annotations

import torch

from ..constructions.linearised import random_inputs
from ..models.attention import LinearSelfAttention
from ..models.gated_rnn import hidden_states
from .boundary import Network, require


def gaussian_inputs(d: int, T: int, batch: int, seed: int) -> torch.Tensor:
    """i.i.d. N(0, 1) inputs (batch, T, d) in float64, as in the teacher-student task."""
    return random_inputs(d, B=batch, T=T, seed=seed)


def reconstruction_score(states: torch.Tensor, targets: torch.Tensor) -> float:
    """1 - R^2 of the linear regression (with intercept) of targets (N, p) on states (N, k); R^2
    sums over samples and target dims. k = 0 leaves only the intercept: the score is 1."""
    if states.dim() != 2 or targets.dim() != 2 or states.shape[0] != targets.shape[0]:
        raise ValueError(
            f"states (N, k) and targets (N, p) need the same N; got {tuple(states.shape)} and "
            f"{tuple(targets.shape)}"
        )
    ones = torch.ones(states.shape[0], 1, dtype=torch.float64)
    X = torch.cat([states.to(torch.float64), ones], dim=1)  # (N, k + 1): with intercept
    Y = targets.to(torch.float64)
    coef = torch.linalg.lstsq(X, Y, driver="gelsd").solution
    res = ((Y - X @ coef) ** 2).sum()
    tot = ((Y - Y.mean(dim=0)) ** 2).sum()
    if tot == 0:
        raise ValueError("the targets are constant: R^2 is undefined")
    return float(res / tot)


def neuron_states(net: Network, x, neurons, name):
    """The states of ``neurons`` of ``net`` on x (B, T, d), flattened to (B T, k)."""
    idx = torch.as_tensor(list(neurons), dtype=torch.long)
    if idx.numel() and (idx.min() < 0 or idx.max() >= net.n):
        raise ValueError(f"{name} neurons {list(neurons)} out of range for n={net.n}")
    with torch.no_grad():
        h = hidden_states(x.to(torch.float64), net.params)  # (B, T, n)
    return h[..., idx].reshape(h.shape[0] * h.shape[1], idx.numel())  # (B T, k)


def score_kv(net: Network, attention: LinearSelfAttention, x: torch.Tensor, neurons) -> float:
    """Score KV: 1 - R^2 from the states of ``neurons`` (the lam ~ 1 group) to flattened M_t."""
    require(net, "score_kv")
    M = attention.key_value_states(x.to(attention.W_V.dtype)).detach()  # (B, T, d_v, d_k)
    H = neuron_states(net, x, neurons, "key-value")  # (B T, k)
    return reconstruction_score(H, M.flatten(2).flatten(0, 1))


def score_q(net: Network, attention: LinearSelfAttention, x: torch.Tensor, neurons) -> float:
    """Score Q: 1 - R^2 from the states of ``neurons`` (the lam ~ 0 group) to q_t."""
    require(net, "score_q")
    q = attention.queries(x.to(attention.W_V.dtype)).detach()  # (B, T, d_k)
    return reconstruction_score(neuron_states(net, x, neurons, "query"), q.flatten(0, 1))
