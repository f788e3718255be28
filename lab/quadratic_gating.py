"""Input gating on quadratic features: a way to the floor, measured as a row of ``make bench``.

The input gating of Eq. (2) multiplies two linear maps of the same input x~ = (x, 1) (d + 1
numbers): u_i = (w1_i . x~)(w2_i . x~) = x~^T O_i x~ with O_i = w1_i w2_i^T. Only the symmetric
part of O_i counts, so u_i is one linear map of the P = (d + 1)(d + 2) / 2 products x~_j x~_k
(j <= k):

    u = M Z,   Z_(jk) = x~_j x~_k,   M_i,(jk) = O_i,jk + O_i,kj (j < k), O_i,jj (j = k)

one product of inner dimension P (15 for d = 4) instead of two of d + 1 and their elementwise
product, and no (2n)-wide intermediate to keep for the backward. The backward is
g_M = g_u Z^T, then g_O_i = g_M_i at (min(j,k), max(j,k)) (a symmetric (d+1) x (d+1) matrix per
neuron) and g_w1_i = g_O_i w2_i, g_w2_i = g_O_i w1_i. ``gating`` is that piece; everything
else is ``compiled_loss.loss_and_grads`` itself (its ``gating`` argument), so the two agree up to
rounding
(``tests/test_quadratic_gating.py``, float64).

``loss_and_grads`` here has the engine's signature; ``bench_ways`` runs it inside the engine's
own compiled step in place of the engine's (row "(f)"). Measured on a 2-core AMD EPYC against
mode "compiled" in one process, in turns (best of 10 to 20 rounds of 30 steps, three sittings):
one student of n = 100 0.90x, 0.96x and 1.05x its speed, the 16 x n = 28 ensemble 1.21x, 0.88x
and 1.04x: no steady gain, so the engine keeps its own input gating.

Glossary (code name -> meaning):
    Z      the pair features x~_j x~_k, j <= k: (E, P, T*B)
    M      each neuron's quadratic form on them: (E, n, P)
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from gated_attention.engine.steps import adamw_apply
from gated_attention.models import compiled_loss

__all__ = ["pairs", "features", "forms", "form_grads", "gating", "loss_and_grads", "adamw_step"]


def pairs(d1: int, device=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(j, k, index): the P pairs j <= k of d1 inputs, and the (d1, d1) symmetric map from a
    pair (j, k) or (k, j) to its place among them."""
    j, k = torch.triu_indices(d1, d1, device=device)
    index = torch.zeros(d1, d1, dtype=torch.long, device=device)
    index[j, k] = index[k, j] = torch.arange(len(j), device=device)
    return j, k, index


def features(X: torch.Tensor) -> torch.Tensor:
    """Z (E, P, T*B): the products X_j X_k, j <= k, of X (E, d+1, T*B)."""
    j, k, _ = pairs(X.shape[1], X.device)
    return X[:, j] * X[:, k]


def forms(W_in: torch.Tensor) -> torch.Tensor:
    """M (E, n, P): each neuron's symmetric form w1 w2^T on the pairs, from W_in (E, 2n, d+1)."""
    n, d1 = W_in.shape[1] // 2, W_in.shape[2]
    j, k, _ = pairs(d1, W_in.device)
    O = W_in[:, :n, :, None] * W_in[:, n:, None, :]  # (E, n, d1, d1)
    return torch.where(j == k, O[:, :, j, k], O[:, :, j, k] + O[:, :, k, j])


def form_grads(g_M: torch.Tensor, W_in: torch.Tensor) -> torch.Tensor:
    """g_W_in (E, 2n, d+1) from g_M (E, n, P): g_w1 = g_O w2, g_w2 = g_O w1."""
    n, d1 = W_in.shape[1] // 2, W_in.shape[2]
    g_O = g_M[:, :, pairs(d1, W_in.device)[2]]  # (E, n, d1, d1), symmetric
    g_w1 = (g_O * W_in[:, n:, None, :]).sum(-1)
    g_w2 = (g_O * W_in[:, :n, None, :]).sum(-1)
    return torch.cat([g_w1, g_w2], dim=1)


def gating(W_in: torch.Tensor, X: torch.Tensor) -> tuple[torch.Tensor, Callable]:
    """``compiled_loss.input_gating`` on quadratic features: (u = M Z, grad(g_u) -> g_W_in)."""
    Z = features(X)
    u = torch.bmm(forms(W_in), Z)  # a GEMM: as sums over the P pairs it ran 3-10x slower

    def grad(g_u: torch.Tensor) -> torch.Tensor:
        return form_grads(torch.bmm(g_u, Z.transpose(1, 2)), W_in)  # g_M (E, n, P)

    return u, grad


def loss_and_grads(*args, **kwargs):
    """``compiled_loss.loss_and_grads`` with the input gating u = M Z (module docstring)."""
    return compiled_loss.loss_and_grads(*args, **kwargs, gating=gating)


def adamw_step(weights, x, y, T, out_steps, scale, state, window, lr, betas, eps) -> None:
    """The engine's compiled AdamW step (``steps._adamw_step``) over this ``loss_and_grads``."""
    loss, *grads = loss_and_grads(*weights, x, y, T, out_steps, scale)
    adamw_apply(weights, grads, loss, state, window, lr, betas, eps)
