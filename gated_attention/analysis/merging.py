"""Merging output-gating neurons whose summed kernels are one product (App. C.2, Fig. 2C).

Output neuron m adds D[:, m] (W_out1[m] . h)(W_out2[m] . h) to y, i.e. h^T (D[o, m] K_m) h for
output o, with the kernel K_m = sym(W_out1[m] W_out2[m]^T), sym(A) = (A + A^T) / 2. A group S
contributes y[o] += h^T K_o h, K_o = sum_{m in S} D[o, m] K_m (d_out kernels, n x n), and can
be replaced by ONE neuron when (i) K_o = u_o K and (ii) K = sym(a b^T) (rank 1, or rank 2 with
eigenvalues of opposite signs): W_out1 = a, W_out2 = b, D[:, new] = u. The paper tests "the
summed kernels are rank 1" on the non-symmetric sum D[o, m] W_out1[m] W_out2[m]^T; the symmetric
test also accepts members that read h with their two rows swapped. ``selector_share``: how much
one output neuron is the construction's, a key-value neuron times a query neuron (App. A.1, C.2).
"""

from __future__ import annotations

import dataclasses
import itertools

import torch

from .boundary import Network, require

#: merging searches all groups of up to 3 output neurons: only for pruned networks this small
MERGE_MAX_M = 40


def output_kernels(net: Network, neurons) -> torch.Tensor:
    """K_o = sum_{m in neurons} D[o, m] sym(W_out1[m] W_out2[m]^T): (d_out, n, n), float64."""
    if require(net, "output_kernels").side:
        raise ValueError("side gating has no output-gating neurons to merge")
    idx = torch.as_tensor(list(neurons), dtype=torch.long)
    if idx.numel() and (idx.min() < 0 or idx.max() >= net.m):
        raise ValueError(f"output neurons {list(neurons)} out of range for m={net.m}")
    A = torch.einsum("om,ma,mb->oab", net.D[:, idx], net.W_out1[idx], net.W_out2[idx])
    return (A + A.transpose(1, 2)) / 2


def product_fit(K: torch.Tensor):
    """Best u (x) sym(a b^T) fit to K (*C, d_out, n, n): (relative error (*C,), u (*C, d_out),
    a (*C, n), b (*C, n))."""
    n = K.shape[-1]
    Kf = K.reshape(*K.shape[:-2], n * n)  # (*C, d_out, n^2)
    _, E = torch.linalg.eigh(Kf @ Kf.transpose(-1, -2))  # (*C, d_out, d_out), cheap: d_out small
    u1 = E[..., :, -1]  # the top left-singular vector of Kf
    C = (u1[..., None, :] @ Kf)[..., 0, :]  # (*C, n^2)
    u = u1 * C.norm(dim=-1, keepdim=True)
    C = (C / C.norm(dim=-1, keepdim=True).clamp(min=torch.finfo(K.dtype).tiny)).reshape(
        *K.shape[:-3], n, n
    )  # K ~ u (x) C, |C| = 1
    C = (C + C.transpose(-1, -2)) / 2
    ev, V = torch.linalg.eigh(C)  # ascending
    lp, ln = ev[..., -1:].clamp(min=0), ev[..., :1].clamp(max=0)  # largest positive, most negative
    a = lp.sqrt() * V[..., :, -1] + (-ln).sqrt() * V[..., :, 0]
    b = lp.sqrt() * V[..., :, -1] - (-ln).sqrt() * V[..., :, 0]
    ab = a[..., :, None] * b[..., None, :]
    fit = u[..., :, None, None] * ((ab + ab.transpose(-1, -2)) / 2)[..., None, :, :]
    scale = K.flatten(-3).norm(dim=-1).clamp(min=torch.finfo(K.dtype).tiny)
    err = (K - fit).flatten(-3).norm(dim=-1) / scale
    return err, u, a, b


def merge_error(net: Network, neurons) -> float:
    """Relative Frobenius error of the best one-neuron replacement of ``neurons`` (0: exact)."""
    return float(product_fit(output_kernels(net, neurons))[0])


@dataclasses.dataclass(frozen=True)
class Merged:
    """The merged network (the ``kept`` output neurons in order, then one neuron per group), the
    merged groups (original output indices) and their errors."""

    net: Network
    groups: list[list[int]]
    errors: list[float]
    kept: list[int]


def merge(net: Network, rtol: float = 1e-3, max_group: int = 3) -> Merged:
    """Greedily merge groups of output-gating neurons with merge_error <= rtol, the largest groups
    (``max_group``) first, the best first within a size. Exhaustive: m <= MERGE_MAX_M."""
    if require(net, "merge").side:
        raise ValueError("side gating has no output-gating neurons to merge")
    m = net.m
    if m > MERGE_MAX_M:
        raise ValueError(f"merge searches all groups; prune first (m={m} > {MERGE_MAX_M})")
    if not (isinstance(max_group, int) and max_group >= 2):
        raise ValueError(f"max_group must be an integer >= 2, got {max_group!r}")
    K = torch.stack([output_kernels(net, [j]) for j in range(m)])  # (m, d_out, n, n)
    pool, groups, errors, fits = list(range(m)), [], [], []
    for size in range(min(max_group, m), 1, -1):
        while len(pool) >= size:
            combos = torch.tensor(list(itertools.combinations(pool, size)))  # (C, size)
            err, u, a, b = product_fit(K[combos].sum(dim=1))
            best = int(err.argmin())
            if err[best] > rtol:
                break
            groups.append(combos[best].tolist())
            errors.append(float(err[best]))
            fits.append((u[best], a[best], b[best]))
            pool = [k for k in pool if k not in groups[-1]]
    W1 = [net.W_out1[pool]] + [a[None] for _, a, _ in fits]
    W2 = [net.W_out2[pool]] + [b[None] for _, _, b in fits]
    D = [net.D[:, pool]] + [u[:, None] for u, _, _ in fits]
    merged = dataclasses.replace(
        net, W_out1=torch.cat(W1), W_out2=torch.cat(W2), D=torch.cat(D, dim=1)
    )
    return Merged(merged, groups, errors, pool)


def selector_share(net: Network, neuron: int, one: list[int], zero: list[int]) -> float:
    """max over the two orders of (|a_one|^2 / |a|^2) (|b_zero|^2 / |b|^2), a = W_out1[neuron],
    b = W_out2[neuron], ``one`` the key-value and ``zero`` the query neurons: 1 for the
    construction's output neurons (App. A.1), 0 for a neuron that reads neither product."""
    if require(net, "selector_share").side:
        raise ValueError("side gating has no output-gating neurons")
    if not 0 <= neuron < net.m:
        raise ValueError(f"output neuron {neuron} out of range for m={net.m}")
    a, b = net.W_out1[neuron], net.W_out2[neuron]
    na, nb = float(a.pow(2).sum()), float(b.pow(2).sum())
    if na == 0 or nb == 0:
        return 0.0

    def share(v: torch.Tensor, idx: list[int], norm: float) -> float:
        return float(v[list(idx)].pow(2).sum()) / norm if idx else 0.0

    return max(
        share(a, one, na) * share(b, zero, nb),
        share(a, zero, na) * share(b, one, nb),
    )


def merged_selector_shares(merged: Merged, one: list[int], zero: list[int]) -> list[float]:
    """``selector_share`` of the neuron each group of ``merged`` became, in ``merged.groups``."""
    first = len(merged.kept)
    return [selector_share(merged.net, first + g, one, zero) for g in range(len(merged.groups))]
