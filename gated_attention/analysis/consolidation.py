"""Consolidation (ours): is a pruned network with surplus neurons a larger copy of a 14-neuron one?

Why: book/surplus_neurons.md, "Why the surplus neurons survive". For each lam group G (key-value:
lam ~ 1, query: lam ~ 0) with input-gating rows w1_i, w2_i (length d+1) and a batch x (B, T, d):

    S_G = U diag(s) V^T  the group's states (B T, |G|), all steps, not centred; V_r (|G|, r) its
                         top r right singular vectors, r the construction's count (App. A.3:
                         d(d+1)/2 key-value, d query; fewer if |G| is smaller)
    z = A^T h_G          obeys z_t = lam z_{t-1} + A^T u_t, A^T u = (x~^T F_k x~)_k,
                         F_k = sum_i A_ik sym(w1_i w2_i^T), sym(M) = (M + M^T) / 2
    A = V_r V_r[J]^T     J: r neurons of the group picked by QR with column pivoting of V_r^T;
                         new neuron k holds neuron J_k's state projected on the top r directions
    fit_errors           each F_k replaced by its best product sym(a b^T) (a gated neuron computes
                         one product): the relative Frobenius errors (``merging.product_fit``)
    lam                  the state-energy-weighted mean of the group's lam
    W_out'_G             W_out_G V_r (A^T V_r)^{-1}, both W_out1 and W_out2 (since
                         V_r^T h_G = (A^T V_r)^{-1} z)

Exact copies (S_G of rank r) give the same function. Neurons in neither group and the output
neurons are kept; a group of at most r neurons is kept as it is. A stationary point of
"loss + wd/2 |theta|^2" is balanced, so compare the balanced penalties (``penalties``).
"""

from __future__ import annotations

import dataclasses

import torch

from ..models.attention import LinearSelfAttention
from ..models.gated_rnn import gated_rnn_forward, hidden_states, nu_from_lam
from .boundary import Network, require
from .lam_groups import LamGroups, lam_groups
from .merging import product_fit
from .penalties import balanced_penalty, output_gating, weight_penalty
from .pruning import prune
from .scores import gaussian_inputs
from .thresholds import PRUNE_TOL

__all__ = [
    "GroupConsolidation",
    "Consolidation",
    "consolidate",
    "consolidate_student",
    "construction_counts",
    "weight_penalty",
    "balanced_penalty",
    "product_forms",
]


@dataclasses.dataclass(frozen=True)
class GroupConsolidation:
    """One lam group before and after consolidation (indices refer to the input network)."""

    name: str  # "key-value" or "query"
    neurons: list[int]  # the group, |G| = len(neurons)
    r: int  # neurons after consolidation
    kept_energy: float  # sum of the top r squared singular values / sum of all
    basis: list[int]  # J: the group neurons whose projected states the new neurons hold
    lam: float  # the new neurons' lam (state-energy-weighted mean; a kept group: only reported)
    fit_errors: list[float]  # relative error of the best product sym(a b^T) of each new form
    svd_fit_error: float  # worst such error in the singular-vector basis (A = V_r), for contrast

    @property
    def size(self) -> int:
        return len(self.neurons)

    @property
    def worst_fit_error(self) -> float:
        return max(self.fit_errors, default=0.0)


@dataclasses.dataclass(frozen=True)
class Consolidation:
    """The result of ``consolidate``: the smaller network and what it changed."""

    net: Network  # consolidated: new key-value, new query, then the other neurons
    groups: tuple[GroupConsolidation, ...]
    n_before: int
    output_change: float  # ||y' - y|| / ||y|| over the batch (Frobenius)
    loss_before: float  # MSE to the teacher on the batch
    loss_after: float
    penalty_before: float  # sum of squares of W_in1, W_in2, W_out1, W_out2, D
    penalty_after: float
    balanced_penalty_before: float  # the smallest penalty over the function-preserving rescalings
    balanced_penalty_after: float

    @property
    def n_after(self) -> int:
        return self.net.n

    @property
    def break_even_weight_decay(self) -> float:
        """The weight decay above which the consolidated network has the smaller
        loss + wd/2 |theta|^2 (both balanced): 2 (loss_after - loss_before) / (balanced penalty
        before - after); 0 if it is not worse in loss, inf if it is not cheaper in penalty."""
        saved = self.balanced_penalty_before - self.balanced_penalty_after
        if saved <= 0:
            return float("inf")
        return 2 * max(self.loss_after - self.loss_before, 0.0) / saved


def construction_counts(d: int) -> dict[str, int]:
    """r of each group in the symmetric construction (App. A.3): {"one": d(d+1)/2, "zero": d}."""
    return {"one": d * (d + 1) // 2, "zero": d}


def product_forms(W_in1: torch.Tensor, W_in2: torch.Tensor) -> torch.Tensor:
    """sym(w1_i w2_i^T) of every row pair: (k, d+1) x2 -> (k, d+1, d+1); u_i = x~^T Q_i x~."""
    Q = W_in1[:, :, None] * W_in2[:, None, :]
    return (Q + Q.transpose(1, 2)) / 2


def _pivots(V: torch.Tensor, r: int) -> list[int]:
    """QR with column pivoting of V^T (V (k, r)): r rows of V, greedily the most independent."""
    R = V.T.clone()  # (r, k): columns = neurons
    chosen: list[int] = []
    for _ in range(r):
        norms = R.norm(dim=0)
        if chosen:
            norms[chosen] = -1.0
        j = int(norms.argmax())
        chosen.append(j)
        q = R[:, j] / R[:, j].norm().clamp(min=torch.finfo(R.dtype).tiny)
        R = R - q[:, None] * (q[None, :] @ R)
    return chosen


def _fit(forms: torch.Tensor):
    """Best sym(a b^T) of each form (k, d+1, d+1): errors (k,), a, b (k, d+1), |a| = |b|."""
    err, u, a, b = product_fit(forms[:, None])  # u (k, 1): the scale of the unit fit
    u = u[:, 0]
    scale = u.abs().sqrt()[:, None]
    return err, torch.sign(u)[:, None] * scale * a, scale * b


def consolidate(
    net: Network,
    groups: LamGroups,
    x: torch.Tensor,
    *,
    teacher: LinearSelfAttention,
    counts: dict[str, int] | None = None,
) -> Consolidation:
    """Replace each lam group by r neurons in its top r state directions (module docstring).

    ``net``: pruned, output gating; ``groups``: its ``lam_groups``; ``x`` (B, T, d): the batch for
    the states, output change and losses (MSE to ``teacher``); ``counts``: r of each group,
    {"one": ..., "zero": ...}, default ``construction_counts(d)``."""
    output_gating(net, "consolidate")
    x = torch.as_tensor(x, dtype=torch.float64)
    if x.dim() != 3 or x.shape[-1] != net.d:
        raise ValueError(f"x must have shape (B, T, d={net.d}), got {tuple(x.shape)}")
    if not isinstance(groups, LamGroups) or groups.lam.shape != (net.n,):
        raise ValueError(f"groups must be the LamGroups of this network (n = {net.n})")
    counts = construction_counts(net.d) if counts is None else dict(counts)
    for key in ("one", "zero"):
        if not (isinstance(counts.get(key), int) and counts[key] >= 1):
            raise ValueError(f"counts[{key!r}] must be a positive integer, got {counts.get(key)}")
    with torch.no_grad():
        H = hidden_states(x, net.params).reshape(-1, net.n)  # (B T, n)
        new, done = _consolidated_network(net, groups, H, counts)
        y = gated_rnn_forward(x, net.params)
        y_new = gated_rnn_forward(x, new.params)
        y_teacher = teacher(x.to(teacher.W_V.dtype)).detach().to(torch.float64)
    scale = float(y.norm())
    return Consolidation(
        net=new,
        groups=done,
        n_before=net.n,
        output_change=float((y_new - y).norm()) / scale if scale > 0 else float("nan"),
        loss_before=float((y - y_teacher).square().mean()),
        loss_after=float((y_new - y_teacher).square().mean()),
        penalty_before=weight_penalty(net),
        penalty_after=weight_penalty(new),
        balanced_penalty_before=balanced_penalty(net),
        balanced_penalty_after=balanced_penalty(new),
    )


def _consolidated_network(
    net: Network,
    groups: LamGroups,
    H: torch.Tensor,
    counts: dict[str, int],
) -> tuple[Network, tuple[GroupConsolidation, ...]]:
    """The network with its "one" and "zero" groups consolidated, and each group's record."""
    lam = groups.lam.to(torch.float64)
    Q = product_forms(net.W_in1, net.W_in2)  # (n, d+1, d+1)
    done: list[GroupConsolidation] = []
    W1, W2, NU, O1, O2 = [], [], [], [], []
    for name, key in (("key-value", "one"), ("query", "zero")):
        idx = list(getattr(groups, key))
        if not idx:
            continue
        group, (a, b, nu, readout) = _consolidate_group(name, idx, H, lam, Q, net, counts[key])
        W1.append(a)
        W2.append(b)
        NU.append(nu)
        O1.append(net.W_out1[:, idx] @ readout)
        O2.append(net.W_out2[:, idx] @ readout)
        done.append(group)
    rest = list(groups.between)
    return Network(
        W_in1=torch.cat(W1 + [net.W_in1[rest]]),
        W_in2=torch.cat(W2 + [net.W_in2[rest]]),
        nu=torch.cat(NU + [net.nu[rest]]),
        W_out1=torch.cat(O1 + [net.W_out1[:, rest]], dim=1),
        W_out2=torch.cat(O2 + [net.W_out2[:, rest]], dim=1),
        D=net.D,
    ), tuple(done)


def _consolidate_group(
    name: str,
    idx: list[int],
    H: torch.Tensor,
    lam: torch.Tensor,
    Q: torch.Tensor,
    net: Network,
    count: int,
) -> tuple[GroupConsolidation, tuple[torch.Tensor, ...]]:
    """Group ``idx`` as r = min(count, |G|) neurons: (record, (W_in1 rows, W_in2 rows, nu,
    readout (|G|, r): h_G ~ readout z)); H (B T, n), lam (n,), Q (n, d+1, d+1)."""
    S = H[:, idx]  # (B T, |G|)
    _, s, Vh = torch.linalg.svd(S, full_matrices=False)
    r = min(count, len(idx))
    V = Vh[:r].T  # (|G|, r)
    svd_err = _fit(torch.einsum("ik,iab->kab", V, Q[idx]))[0]
    energy = S.square().sum(0)  # (|G|,)
    total = float(energy.sum())
    lam_g = float((energy * lam[idx]).sum() / total) if total > 0 else float(lam[idx][0])
    lam_g = min(max(lam_g, float(lam[idx].min())), float(lam[idx].max()))
    if len(idx) <= count:  # nothing to consolidate: the group stays as it is
        J, readout = list(range(len(idx))), torch.eye(len(idx), dtype=torch.float64)
        err = torch.zeros(len(idx), dtype=torch.float64)
        a, b, nu = net.W_in1[idx], net.W_in2[idx], net.nu[idx]
    else:
        J = _pivots(V, r)
        A = V @ V[J].T  # (|G|, r): z = A^T h_G
        readout = V @ torch.linalg.inv(V[J])  # (|G|, r): h_G ~ readout z
        err, a, b = _fit(torch.einsum("ik,iab->kab", A, Q[idx]))  # forms (r, d+1, d+1)
        nu = nu_from_lam(torch.full((r,), lam_g, dtype=torch.float64))
    s2 = s.square()
    group = GroupConsolidation(
        name=name,
        neurons=idx,
        r=r,
        kept_energy=float(s2[:r].sum() / s2.sum()) if float(s2.sum()) > 0 else 1.0,
        basis=[idx[j] for j in J],
        lam=lam_g,
        fit_errors=err.tolist(),
        svd_fit_error=float(svd_err.max()),
    )
    return group, (a, b, nu, readout)


def consolidate_student(
    student: Network,
    teacher: LinearSelfAttention,
    *,
    T: int,
    prune_tol: float = PRUNE_TOL,
    batch: int = 256,
    seed: int = 7,
) -> Consolidation:
    """Prune a trained student (``prune_tol``), group its lam (``LAM_TOL``) and consolidate it on
    ``batch`` fresh N(0, I) sequences of length T drawn from ``seed`` (``gaussian_inputs``)."""
    pr = prune(require(student, "consolidate_student"), prune_tol)
    x = gaussian_inputs(teacher.d, T, batch, seed)
    return consolidate(pr.net, lam_groups(pr.net), x, teacher=teacher)
