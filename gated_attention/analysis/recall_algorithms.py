"""Reverse engineering networks trained on associative recall (App. D.3, Fig. 7).

The inputs are one-hot, so what hidden neuron i adds to its state at a pair step is a table, its
*pair block* P_i[v, k] = (W_in1[i] x~)(W_in2[i] x~) for x = [e_k; e_v]. Every key appears once per
sequence, so only the double-centred block, the neuron's *key-value block*, tells sequences
apart; for the attention construction it is (e_v - 1/N)(e_k - 1/N)^T: rank 1, one positive peak.
In words: book/associative_recall.md, "Three hand-built networks, three costs".

Glossary: K, V the number of keys, of values; memory (current): the kept hidden neurons with
lam >= MEMORY_LAM_RECALL (lam below it); k(o) the key paired with value o, kq the queried key.
"""

from __future__ import annotations

import dataclasses

import torch

from ..models.gated_rnn import gated_rnn_forward, hidden_states
from ..tasks.associative_recall import AssociativeRecall, RecallBatch
from .boundary import F64, Network, require
from .pruning import Pruned, prune
from .scores import reconstruction_score
from .thresholds import MEMORY_LAM_RECALL, PRUNE_TOL

#: ``value_neurons``: a memory neuron's key-value block counts above this times the largest one
BLOCK_RTOL = 1e-3
#: ``value_neurons``: the selectivity, code alignment and key_rank1 of a per-value neuron
PER_VALUE = 0.9


def _gate(net: Network, x_tilde: torch.Tensor) -> torch.Tensor:
    """(W_in1 x~)(W_in2 x~) for x~ (..., d+1) -> (n, ...)."""
    a = torch.einsum("nd,...d->n...", net.W_in1, x_tilde)
    return a * torch.einsum("nd,...d->n...", net.W_in2, x_tilde)


def _check_inputs(net: Network, n_keys: int, n_values: int) -> int:
    d = n_keys + n_values
    if net.d != d:
        raise ValueError(f"the network reads {net.d} inputs, not K + V = {d}")
    return d


def pair_blocks(net: Network, n_keys: int, n_values: int) -> torch.Tensor:
    """P[i, v, k]: what neuron i adds at the pair step [e_k; e_v]; (n, V, K) float64."""
    d = _check_inputs(require(net, "pair_blocks"), n_keys, n_values)
    x = torch.zeros(n_values, n_keys, d + 1, dtype=F64)  # x[v, k] = [e_k; e_v; 1]
    x[:, :, :n_keys] = torch.eye(n_keys, dtype=F64)
    x[:, :, n_keys:d] = torch.eye(n_values, dtype=F64)[:, None, :]
    x[:, :, d] = 1.0
    return _gate(net, x)


def query_increments(net: Network, n_keys: int, n_values: int) -> torch.Tensor:
    """Q[i, k]: what neuron i adds at the query step [e_k; 0]; (n, K) float64."""
    d = _check_inputs(require(net, "query_increments"), n_keys, n_values)
    x = torch.zeros(n_keys, d + 1, dtype=F64)
    x[:, d] = 1.0
    x[torch.arange(n_keys), torch.arange(n_keys)] = 1.0
    return _gate(net, x)


def double_centre(blocks: torch.Tensor) -> torch.Tensor:
    """Remove row and column means of the last two dims (..., V, K)."""
    rows, cols = blocks.mean(dim=-1, keepdim=True), blocks.mean(dim=-2, keepdim=True)
    return blocks - rows - cols + blocks.mean(dim=(-2, -1), keepdim=True)


@dataclasses.dataclass(frozen=True)
class BlockStructure:
    """Key-value blocks (double-centred, oriented: largest |entry| positive) and their shape.

    rank1          (n,) fraction of each block's squared Frobenius norm in its top singular value
    negative_peak  (n,) -min / max of the oriented block: 1/(N-1) for (e_v - 1/N)(e_k - 1/N)^T,
                   1 for (e_v - e_v')(e_k - e_k')^T (a negative peak of equal amplitude)
    peak           (n, 2) the (v, k) of each block's positive peak
    value_vector, key_vector  (n, V), (n, K): unit singular vectors, block ~ s u w^T
    """

    blocks: torch.Tensor
    norm: torch.Tensor
    rank1: torch.Tensor
    negative_peak: torch.Tensor
    peak: torch.Tensor
    value_vector: torch.Tensor
    key_vector: torch.Tensor


def block_structure(blocks: torch.Tensor) -> BlockStructure:
    """Structure of raw pair blocks (n, V, K); they are double-centred here (zero blocks: nan)."""
    if blocks.dim() != 3:
        raise ValueError(f"blocks must have shape (n, V, K), got {tuple(blocks.shape)}")
    C = double_centre(blocks.to(F64))
    flat = C.flatten(1)
    big = flat.gather(1, flat.abs().argmax(dim=1, keepdim=True))[:, 0]
    C = C * torch.where(big < 0, -1.0, 1.0)[:, None, None]
    norm = C.flatten(1).norm(dim=1)
    U, S, Vh = torch.linalg.svd(C)
    nan = torch.full_like(norm, float("nan"))
    zero = norm <= 1e-12
    rank1 = torch.where(zero, nan, S[:, 0] ** 2 / (S**2).sum(dim=1).clamp(min=1e-300))
    top, low = C.flatten(1).max(dim=1).values, C.flatten(1).min(dim=1).values
    neg = torch.where(zero, nan, -low / top.clamp(min=1e-300))
    K = C.shape[2]
    at = C.flatten(1).argmax(dim=1)
    peak = torch.stack([at // K, at % K], dim=1)
    u, w = U[:, :, 0], Vh[:, 0, :]
    sign = torch.where(u.gather(1, peak[:, :1])[:, 0] < 0, -1.0, 1.0)  # u positive at the peak
    return BlockStructure(C, norm, rank1, neg, peak, u * sign[:, None], w * sign[:, None])


def key_value_matrices(batch: RecallBatch, n_values: int) -> torch.Tensor:
    """M[b, v, k] = number of times the pair (k, v) was shown in sequence b: (B, V, K)."""
    B, K = batch.keys.shape
    M = torch.zeros(B, n_values, K, dtype=F64)
    M[torch.arange(B)[:, None], batch.values, batch.keys] += 1.0
    return M


def recall_score_kv(net: Network, batch: RecallBatch, neurons, n_values: int) -> float:
    """Score KV (``scores.reconstruction_score``) from the states of ``neurons`` after the last
    pair step (before the query) to the flattened M (V K targets)."""
    require(net, "recall_score_kv")
    idx = torch.as_tensor(list(neurons), dtype=torch.long)
    with torch.no_grad():
        h = hidden_states(batch.x.to(F64), net.params)[:, -2]  # (B, n): every pair, no query
    return reconstruction_score(h[:, idx], key_value_matrices(batch, n_values).flatten(1))


@dataclasses.dataclass(frozen=True)
class ValueNeurons:
    """Memory neurons read as per-value neurons holding a key code (the paper's io solution).

    kv             memory neurons with a nonzero key-value block
    value          (len(kv),) the value each one is most selective to
    selectivity    (len(kv),) |cos| of its value vector with the centred one-hot of that value
    code           (K,) the key code: top key direction of all kv blocks stacked (unit norm)
    key_rank1      fraction of the stacked blocks' energy in that one key direction (1: every
                   memory neuron holds one scalar code per value; 1/(K-1) for attention)
    current_alignment  |cos| of the current neurons' centred query-step increments with ``code``
    per_value      kv neurons with selectivity and code alignment >= PER_VALUE, where
                   key_rank1 >= PER_VALUE too (else there is no shared code: none)
    values_covered distinct values among the per-value neurons
    """

    kv: list[int]
    value: list[int]
    selectivity: torch.Tensor
    code: torch.Tensor
    key_rank1: float
    current: list[int]
    current_alignment: torch.Tensor
    per_value: list[int]
    values_covered: int


def _kv_neurons(blocks: BlockStructure, memory: list[int], rtol: float) -> list[int]:
    if not memory:
        return []
    norms = blocks.norm[memory]
    top = float(norms.max())
    return [i for i, v in zip(memory, norms.tolist(), strict=True) if top > 0 and v > rtol * top]


def value_neurons(net: Network, n_keys: int, n_values: int) -> ValueNeurons:
    """Per-value neurons and the key code they share (see ``ValueNeurons``)."""
    lam = require(net, "value_neurons").lam
    memory = (lam >= MEMORY_LAM_RECALL).nonzero().flatten().tolist()
    current = (lam < MEMORY_LAM_RECALL).nonzero().flatten().tolist()
    bs = block_structure(pair_blocks(net, n_keys, n_values))
    kv = _kv_neurons(bs, memory, BLOCK_RTOL)
    e = torch.eye(n_values, dtype=F64) - 1.0 / n_values
    e = e / e.norm(dim=1, keepdim=True)  # centred one-hot of each value, unit norm
    cos = (bs.value_vector[kv] @ e.T).abs()  # (len(kv), V)
    selectivity, value = cos.max(dim=1) if kv else (torch.zeros(0, dtype=F64), torch.zeros(0))
    if kv:  # the blocks stacked: rows (neuron, value), columns keys
        _, S, Vh = torch.linalg.svd(bs.blocks[kv].reshape(-1, n_keys), full_matrices=False)
        code, key_rank1 = Vh[0], float(S[0] ** 2 / (S**2).sum())
    else:
        code, key_rank1 = torch.full((n_keys,), float("nan"), dtype=F64), float("nan")
    align = (bs.key_vector[kv] @ code).abs()
    q = query_increments(net, n_keys, n_values)[current]
    q = q - q.mean(dim=1, keepdim=True)
    cur_align = (q @ code).abs() / q.norm(dim=1).clamp(min=1e-300)
    good = [  # per-value neurons exist only where the memory shares one key code
        i
        for i, s, a in zip(kv, selectivity.tolist(), align.tolist(), strict=True)
        if s >= PER_VALUE and a >= PER_VALUE and key_rank1 >= PER_VALUE
    ]
    covered = len({int(value[kv.index(i)]) for i in good})
    return ValueNeurons(
        kv, [int(v) for v in value], selectivity, code, key_rank1, current, cur_align,
        good, covered,
    )  # fmt: skip


@dataclasses.dataclass(frozen=True)
class SquaredDifferenceFit:
    """y[o] at the query step ~ a[o] - b[o] (code[k(o)] - code[kq])^2, b >= 0, least squares.

    r2        1 - residual / total sum of squares (total around each output's mean)
    ceiling   the R^2 of the best function of (o, k(o), kq) at all: what any model that reads
              only the key stored with each value and the queried key can reach
    """

    code: torch.Tensor
    a: torch.Tensor
    b: torch.Tensor
    r2: float
    ceiling: float


def _k_of_value(batch: RecallBatch, n_values: int) -> torch.Tensor:
    B, K = batch.keys.shape
    if n_values != K or not torch.equal(
        batch.values.sort(dim=1).values, torch.arange(K).expand(B, K)
    ):
        raise ValueError("the squared-difference model needs every value exactly once (N_k = N_v)")
    k_of = torch.empty(B, n_values, dtype=torch.long)
    k_of[torch.arange(B)[:, None], batch.values] = batch.keys
    return k_of


def squared_difference_fit(
    q_hat: torch.Tensor, batch: RecallBatch, *, restarts: int = 12, seed: int = 0
) -> SquaredDifferenceFit:
    """Fit the outputs at the query step, q_hat (B, V), with the squared-difference model: to
    the count-weighted means of the (o, k(o), kq) cells (the within-cell scatter added to the
    residual), L-BFGS from ``restarts`` seeded random codes, the best fit kept."""
    B, V = q_hat.shape
    K = batch.keys.shape[1]
    k_of = _k_of_value(batch, V)
    y = q_hat.detach().to(F64)
    cell = (torch.arange(V) * K + k_of) * K + batch.query_key[:, None]  # (B, V)
    count = torch.bincount(cell.flatten(), minlength=V * K * K).to(F64)
    total = torch.bincount(cell.flatten(), y.flatten(), minlength=V * K * K)
    sq = float((y**2).sum())
    mean = total / count.clamp(min=1)
    within = sq - float((total * mean).sum())
    sst = float(((y - y.mean(dim=0)) ** 2).sum())
    if sst <= 0:
        raise ValueError("the outputs are constant: R^2 is undefined")
    Y, w = mean.reshape(V, K, K), count.reshape(V, K, K)
    g = torch.Generator().manual_seed(seed)
    best = None
    for _ in range(restarts):
        c = torch.randn(K, generator=g, dtype=F64).requires_grad_(True)
        a = (total.reshape(V, -1).sum(1) / count.reshape(V, -1).sum(1)).clone().requires_grad_(True)
        beta = torch.ones(V, dtype=F64, requires_grad=True)
        opt = torch.optim.LBFGS([c, a, beta], max_iter=300, line_search_fn="strong_wolfe")

        def loss(c=c, a=a, beta=beta):
            diff = (c[:, None] - c[None, :]) ** 2  # (K, K): k(o), kq
            model = a[:, None, None] - beta[:, None, None] ** 2 * diff
            return (w * (Y - model) ** 2).sum()

        def closure(opt=opt, loss=loss):
            opt.zero_grad()
            out = loss()
            out.backward()
            return out

        opt.step(closure)
        with torch.no_grad():
            ssr = float(loss())
        if best is None or ssr < best[0]:
            best = (ssr, c.detach(), a.detach(), beta.detach() ** 2)
    ssr, c, a, b = best
    return SquaredDifferenceFit(c, a, b, 1 - (ssr + within) / sst, 1 - within / sst)


@dataclasses.dataclass(frozen=True)
class RecallAnalysis:
    """``analyse_recall`` of one network; neuron indices refer to ``pruned.net``."""

    pruned: Pruned
    prune_change: float
    accuracy: float
    accuracy_pruned: float
    lam: torch.Tensor
    memory: list[int]
    current: list[int]
    score_kv: float
    blocks: BlockStructure
    values: ValueNeurons
    ordered: Network
    hidden_order: list[int]
    groups: list[tuple[str, int, int]]
    sd_fit: SquaredDifferenceFit | None


def _accuracy(net: Network, batch: RecallBatch) -> tuple[float, torch.Tensor]:
    with torch.no_grad():
        q = gated_rnn_forward(batch.x.to(F64), net.params)[:, -1]
    return float((q.argmax(dim=1) == batch.answer).to(F64).mean()), q


def analyse_recall(
    net: Network,
    task: AssociativeRecall,
    batch: RecallBatch,
    *,
    prune_tol: float = PRUNE_TOL,
    sd_fit: bool | None = None,
) -> RecallAnalysis:
    """Prune, split by lam, read the key-value blocks, Score KV, per-value neurons and (output
    gating, by default) the squared-difference fit; order the neurons for the figure: memory
    neurons by the peak (v, k) of their block, then current neurons, then the rest."""
    require(net, "analyse_recall")
    K, V = task.n_keys, task.n_values
    pr = prune(net, prune_tol)
    q = pr.net
    acc, y_full = _accuracy(net, batch)
    acc_pruned, y_pruned = _accuracy(q, batch)
    lam = q.lam
    memory = (lam >= MEMORY_LAM_RECALL).nonzero().flatten().tolist()
    blocks = block_structure(pair_blocks(q, K, V))
    values = value_neurons(q, K, V)
    kv, current = values.kv, values.current
    const = [i for i in memory if i not in kv]
    kv_sorted = sorted(kv, key=lambda i: (int(blocks.peak[i, 0]), int(blocks.peak[i, 1])))
    order = kv_sorted + const + current
    groups = [(f"key-value (λ≥{MEMORY_LAM_RECALL:g})", 0, len(kv_sorted))]
    groups += [("constant", len(kv_sorted), len(kv_sorted) + len(const))]
    groups += [(f"current (λ<{MEMORY_LAM_RECALL:g})", len(kv_sorted) + len(const), len(order))]
    groups = [g for g in groups if g[2] > g[1]]
    # output neurons by the output they drive most
    out_order = None if q.side else sorted(range(q.m), key=lambda m: int(q.D[:, m].abs().argmax()))
    do_fit = (not q.side) if sd_fit is None else sd_fit
    return RecallAnalysis(
        pr, float((y_full - y_pruned).abs().max()), acc, acc_pruned, lam, memory, current,
        recall_score_kv(q, batch, memory, V), blocks, values,
        q.subnetwork(order, out_order), order, groups,
        squared_difference_fit(y_full, batch) if do_fit else None,
    )  # fmt: skip
