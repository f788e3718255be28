"""Fig. 3A/B's second reading, ours: did each student of a size sweep learn the construction?
(a low loss AND the lam ~ 1 states hold M_t: ``analysis.success``). The central reading, the
loss edge, is ``fig3_edges``.

    sweep_success    a finished sweep -> normalised losses, Score KV, per-seed fractions and n*
    read_sweep       a finished sweep -> SweepReading (the per-seed fractions and Score KV)
    reading_lines    its learned counts per size, as printed lines
    reading_records  its row ``fig3<p>.transition_learned``, with the budget
    all_learn_from   the smallest size from which every seed of every larger size learned
    setup_text       each panel's teacher, sizes, seeds and training, against the paper profile's
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from .. import analysis, experiments
from ..analysis.success import LEARNED_LOSS, LEARNED_SCORE
from . import scorecard, verdict

__all__ = [
    "SweepReading",
    "sweep_success",
    "read_sweep",
    "reading_lines",
    "reading_records",
    "all_learn_from",
    "setup_text",
]

#: the Score KV inputs (sequences, seed): the same for every sweep the chapter reads
KV_INPUTS, KV_SEED = 256, 7


@dataclasses.dataclass(frozen=True)
class SweepReading:
    """One sweep read: ``learned`` the per-seed fractions and their n*, ``kv`` (sizes, seeds)
    the Score KV of each whole member."""

    panel: str  # "A" or "B"
    config: Any
    learned: Any  # analysis.Fractions
    kv: np.ndarray

    @property
    def spent(self) -> int:
        """Steps x T: which of two sweeps of a panel had the larger budget."""
        return self.config.train.steps * self.config.T


def sweep_success(
    run, x: torch.Tensor
) -> tuple[np.ndarray, np.ndarray, np.ndarray, analysis.Fractions]:
    """Fig. 3A/B by per-seed successes: (sizes (S,), normalised losses (S, R), Score KV (S, R),
    fractions and n*) of a finished teacher-student size sweep ``run`` (a results entry).

    Score KV of each whole member (``analysis.kv_score_unpruned``) on the inputs x (B, T, d)."""
    config = run.config
    sizes, L = experiments.normalised_losses(config, run.tensors["eval_loss"])
    students = run.students()
    kv = np.array(
        [
            analysis.kv_score_unpruned(analysis.network(student), config.task(seed).teacher, x)
            for student, (seed, _, _) in zip(students, config.members(), strict=True)
        ]
    ).reshape(L.shape)
    ok = (L <= LEARNED_LOSS) & (kv <= LEARNED_SCORE)
    return sizes, L, kv, analysis.transition_by_fraction(sizes, ok)


def read_sweep(run) -> SweepReading:
    """The per-seed reading of Fig. 3A/B on the finished sweep ``run`` (a results entry)."""
    c = run.config
    x_kv = analysis.gaussian_inputs(c.d, c.T, KV_INPUTS, seed=KV_SEED)
    _, _, kv, learned = sweep_success(run, x_kv)
    return SweepReading(c.name.removeprefix("how-many-neurons-"), c, learned, kv)


def reading_lines(r: SweepReading) -> str:
    """Per size: how many seeds learned the construction (Wilson 95%) and the range of Score
    KV; then n*."""
    f = r.learned
    lines = [f"  seeds that learned the construction, of {f.R}"]
    for n, k, lo, hi, kv in zip(f.sizes, f.k, f.lo, f.hi, r.kv, strict=True):
        lines.append(
            f"  n = m = {n:4d}: {k} of {f.R} (Wilson 95% {lo:.2f}-{hi:.2f}); "
            f"Score KV {kv.min():.1e} .. {kv.max():.1e}"
        )
    lines.append(f"  n* (at least half of the seeds learned, there and above) = {f.estimate}")
    return "\n".join(lines)


def reading_records(r: SweepReading, *, profile: str, run: str = "") -> list:
    """The row ``fig3<p>.transition_learned`` (``run``: the recorded run's name, if one)."""
    rid = f"fig3{r.panel.lower()}"
    c, f = r.config, r.learned
    budget = verdict.budget(rid, steps=c.train.steps, T=c.T, seeds=f.R)
    return [
        scorecard.record(
            f"{rid}.transition_learned",
            float("nan") if f.estimate is None else f.estimate,
            seeds=f.R,
            note="learned per size: "
            + ", ".join(f"{n}: {k}/{f.R}" for n, k in zip(f.sizes, f.k, strict=True)),
            profile=profile,
            run=run,
            budget=budget,
        )
    ]


def all_learn_from(r: SweepReading) -> int | None:
    """The smallest swept size from which every seed of every larger size learned the
    construction (None: the largest size has a seed that did not)."""
    from_n = None
    for n, k in zip(r.learned.sizes[::-1], r.learned.k[::-1], strict=True):
        if k != r.learned.R:
            break
        from_n = int(n)
    return from_n


def setup_text(configs: dict, papers: dict) -> str:
    """Two lines per panel p of ``configs`` (p -> ``experiments.how_many_neurons_config``): its
    d, teacher rank, T and sizes n = m; its seeds and steps beside the paper profile's
    (``papers``, p -> config), learning rate and weight decay."""
    lines = []
    for p, c in configs.items():
        paper = papers[p]
        lines.append(
            f"Fig. 3{p}: d = {c.d}, teacher rank {c.teacher_rank or c.d}, T = {c.T}, "
            f"n = m in {list(c.sizes)},\n  {len(c.seeds)} seeds, {c.train.steps:,} steps "
            f"(paper profile: {len(paper.seeds)} seeds, {paper.train.steps:,}), lr "
            f"{c.train.lr:g}, weight decay {c.train.weight_decay:g}"
        )
    return "\n".join(lines)
