"""Fig. 3A/B read from one finished size sweep, quick or recorded, with the chapter's two
estimators: the loss threshold (``analysis.transition_point``) and the per-seed criterion
(``analysis.sweep_success``: did each student learn the construction?).

    read_sweep       a finished sweep -> SweepReading (sizes, losses, both transitions)
    reading_lines    its per-size losses and learned counts, as printed lines
    reading_records  its two scorecard rows (``fig3a.*`` or ``fig3b.*``), with the budget
    reading_sentence what a reading says of the transition, in one sentence for the prose
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import analysis
from . import scorecard, verdict

__all__ = ["SweepReading", "read_sweep", "reading_lines", "reading_records", "reading_sentence"]

#: the bootstrap of the loss-threshold transition (resamples, seed), and the Score KV inputs
#: (sequences, seed): the same for every sweep the chapter reads
N_BOOT, BOOT_SEED = 1000, 0
KV_INPUTS, KV_SEED = 256, 7


@dataclasses.dataclass(frozen=True)
class SweepReading:
    """One sweep read: ``L`` (sizes, seeds) normalised held-out losses, ``loss`` the
    loss-threshold transition, ``learned`` the per-seed fractions and their n*."""

    panel: str  # "A" or "B"
    config: Any
    sizes: np.ndarray
    L: np.ndarray
    loss: Any  # analysis.Transition
    learned: Any  # analysis.Fractions

    @property
    def spent(self) -> int:
        """Steps x T: which of two sweeps of a panel had the larger budget."""
        return self.config.train.steps * self.config.T


def read_sweep(run, threshold: float) -> SweepReading:
    """Both estimators of Fig. 3A/B on the finished sweep ``run`` (a results entry)."""
    c = run.config
    sizes, L = analysis.normalised_losses(c, run.tensors["eval_loss"])
    loss = analysis.transition_point(sizes, L, threshold=threshold, n_boot=N_BOOT, seed=BOOT_SEED)
    x_kv = analysis.gaussian_inputs(c.d, c.T, KV_INPUTS, seed=KV_SEED)
    _, _, _, learned = analysis.sweep_success(run, x_kv)
    panel = c.name.removeprefix("how-many-neurons-")
    return SweepReading(panel, c, sizes, L, loss, learned)


def reading_lines(r: SweepReading) -> str:
    """Per size: the geometric-mean normalised loss (min .. max over seeds) and how many seeds
    learned the construction; then both n*."""
    lines = [f"  T = {r.config.T}, {len(r.config.seeds)} seeds, sizes {list(r.config.sizes)}"]
    for n, row, k in zip(r.sizes, r.L, r.learned.k, strict=True):
        g = 10 ** np.log10(row).mean()
        lines.append(
            f"  n = m = {n:4d}: {g:9.3g}  ({row.min():.3g} .. {row.max():.3g}); "
            f"learned {k}/{r.learned.R}"
        )
    lines.append(f"  n* (loss threshold) = {r.loss.estimate}; n* (learned) = {r.learned.estimate}")
    return "\n".join(lines)


def reading_records(r: SweepReading, *, profile: str, run: str = "") -> list:
    """The two scorecard rows of the sweep (``run``: the recorded run's name, if it is one)."""
    rid = f"fig3{r.panel.lower()}"
    c, f, tr = r.config, r.learned, r.loss
    budget = verdict.budget(rid, steps=c.train.steps, T=c.T, seeds=f.R)
    interval = "none" if tr.lo is None else f"{tr.lo:g}-{tr.hi:g}"
    kw = dict(profile=profile, run=run, budget=budget)
    return [
        scorecard.record(
            f"{rid}.transition",
            float("nan") if tr.estimate is None else tr.estimate,
            seeds=len(c.seeds),
            note=f"68% bootstrap {interval}",
            **kw,
        ),
        scorecard.record(
            f"{rid}.transition_learned",
            float("nan") if f.estimate is None else f.estimate,
            seeds=f.R,
            note="learned per size: "
            + ", ".join(f"{n}: {k}/{f.R}" for n, k in zip(f.sizes, f.k, strict=True)),
            **kw,
        ),
    ]


def all_learn_from(r: SweepReading) -> int | None:
    """The smallest swept size from which every seed of every larger size learned the
    construction (None: the largest size has a seed that did not)."""
    from_n = None
    for n, k in zip(r.sizes[::-1], r.learned.k[::-1], strict=True):
        if k != r.learned.R:
            break
        from_n = int(n)
    return from_n


def reading_sentence(r: SweepReading, construction: int) -> str:
    """One sentence: the reading's budget, both n* and from which size every seed learned,
    against the construction's count ``construction`` and the paper's value (its data file)."""
    c = r.config
    n_from = all_learn_from(r)
    every = (
        f"every seed learns the construction at every size from n = {n_from} on"
        if n_from is not None
        else "at the largest size not every seed learns the construction"
    )
    return (
        f"Fig. 3{r.panel} at {c.train.steps:,} steps, T = {c.T}, {r.learned.R} seeds: n* is "
        f"{r.loss.estimate} by the loss threshold and {r.learned.estimate} by the per-seed "
        f"criterion, against the construction's {construction} neurons (the paper: about "
        f"{scorecard.paper_values()[f'fig3{r.panel.lower()}.transition']['paper']}); {every}."
    )
