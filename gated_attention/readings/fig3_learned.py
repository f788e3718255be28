"""Fig. 3A/B's second reading, ours: did each student of a size sweep learn the construction?
(a low loss AND the lam ~ 1 states hold M_t: ``analysis.success``). The central reading, the
loss edge, is ``fig3_edges``."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from .. import analysis
from ..analysis.success import LEARNED_LOSS, LEARNED_SCORE
from .fig3_rows import ScoreRow
from .sweep_losses import normalised_losses

#: the Score KV inputs (sequences, seed): the same for every sweep the chapter reads
KV_INPUTS, KV_SEED = 256, 7


@dataclasses.dataclass(frozen=True)
class SweepReading:
    """One sweep read: ``kv`` (sizes, seeds) the Score KV of each whole member."""

    panel: str  # "A" or "B"
    config: Any
    learned: Any  # analysis.Fractions
    kv: np.ndarray

    @property
    def claim(self) -> str:
        """Its claim in paper_values.json: "fig3a" or "fig3b"."""
        return f"fig3{self.panel.lower()}"


def sweep_success(run, x: torch.Tensor) -> tuple[np.ndarray, analysis.Fractions]:
    """Fig. 3A/B by per-seed successes: (Score KV (S, R) of each whole member on ``x`` (B, T, d),
    fractions and n*) of a finished size sweep ``run``."""
    config = run.config
    sizes, L = normalised_losses(config, run.tensors["eval_loss"])
    kv = np.array(
        [
            analysis.kv_score_unpruned(analysis.network(student), config.task(seed).teacher, x)
            for student, (seed, _, _) in zip(run.students(), config.members(), strict=True)
        ]
    ).reshape(L.shape)
    ok = (L <= LEARNED_LOSS) & (kv <= LEARNED_SCORE)
    return kv, analysis.transition_by_fraction(sizes, ok)


def read_sweep(run) -> SweepReading:
    """The per-seed reading of Fig. 3A/B on the finished sweep ``run`` (a results entry)."""
    c = run.config
    kv, learned = sweep_success(run, analysis.gaussian_inputs(c.d, c.T, KV_INPUTS, seed=KV_SEED))
    return SweepReading(c.name.removeprefix("how-many-neurons-"), c, learned, kv)


@dataclasses.dataclass(frozen=True)
class LearnedRow:
    """One size: ``k`` of ``R`` seeds learned the construction (Wilson 95% ``lo`` to ``hi``)."""

    n: int
    k: int
    R: int
    lo: float
    hi: float
    kv_min: float
    kv_max: float


def learned_rows(r: SweepReading) -> list[LearnedRow]:
    """A ``LearnedRow`` per size; the reading's n* is ``r.learned.estimate``."""
    f = r.learned
    return [
        LearnedRow(int(n), int(k), f.R, float(lo), float(hi), float(kv.min()), float(kv.max()))
        for n, k, lo, hi, kv in zip(f.sizes, f.k, f.lo, f.hi, r.kv, strict=True)
    ]


def score_rows(r: SweepReading, run: str = "") -> list[ScoreRow]:
    """The row ``fig3<p>.transition_learned`` (``run``: the recorded run's name, if one)."""
    f = r.learned
    return [
        ScoreRow(
            f"{r.claim}.transition_learned",
            float("nan") if f.estimate is None else f.estimate,
            seeds=f.R,
            note="learned per size: "
            + ", ".join(f"{n}: {k}/{f.R}" for n, k in zip(f.sizes, f.k, strict=True)),
            run=run,
        )
    ]


@dataclasses.dataclass(frozen=True)
class SetupRow:
    """A panel's sweep (sizes: n = m), beside the paper profile's seeds and steps."""

    panel: str
    d: int
    rank: int
    T: int
    sizes: tuple[int, ...]
    seeds: int
    steps: int
    paper_seeds: int
    paper_steps: int
    lr: float
    weight_decay: float


def setup_rows(configs: dict, papers: dict) -> list[SetupRow]:
    """A ``SetupRow`` per panel of ``configs`` and ``papers`` (p -> ``how_many_neurons_config``)."""
    return [
        SetupRow(
            p,
            c.d,
            c.teacher_rank or c.d,
            c.T,
            tuple(c.sizes),
            len(c.seeds),
            c.train.steps,
            len(papers[p].seeds),
            papers[p].train.steps,
            c.train.lr,
            c.train.weight_decay,
        )
        for p, c in configs.items()
    ]
