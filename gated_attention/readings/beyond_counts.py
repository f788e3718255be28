"""How many output-gating neurons trained students keep, beside the compressed count
(``constructions.compressed_output``: d(d+1)/2, and no exact network needs fewer): each member
of the recorded teacher-identification runs reverse-engineered as the teacher-identification
chapter does (``teacher_members.member_rows``), one ``OutputCount`` per member.
"""

from __future__ import annotations

import dataclasses

from ..analysis.thresholds import PRUNE_TOL
from ..experiments import recorded, recorded_names
from .teacher_members import member_rows


@dataclasses.dataclass(frozen=True)
class OutputCount:
    """One trained member after reverse engineering."""

    run: str
    seed: int
    n: int  # hidden neurons after pruning
    m: int  # output-gating neurons after pruning
    m_merged: int  # after merging output neurons that are one neuron in disguise
    lam_one: int  # hidden neurons with lam > 1 - lam_tol
    lam_zero: int  # hidden neurons with lam < lam_tol
    normalised_loss: float
    learned: bool


def student_output_counts(run, label: str, *, prune_tol: float = PRUNE_TOL) -> list[OutputCount]:
    """One ``OutputCount`` per member of the teacher-identification entry ``run``."""
    return [
        OutputCount(
            run=label,
            seed=r.seed,
            n=r.hidden,
            m=r.output,
            m_merged=r.rev.merged.net.m,
            lam_one=r.lam_one,
            lam_zero=r.lam_zero,
            normalised_loss=r.norm_loss,
            learned=bool(r.learned),
        )
        for r in member_rows(run, prune_tol=prune_tol)
    ]


def recorded_output_counts(
    prefix: str = "teacher-identification", *, prune_tol: float = PRUNE_TOL
) -> list[OutputCount]:
    """``student_output_counts`` of every recorded run whose name starts ``prefix``, each
    member once: a member that two recorded runs hold (the same config but its seeds, the
    same seed, the same kind of device: one training) is read from the run with more seeds. A
    seed trained on a CPU and on a GPU is two members (the rounding makes two trajectories)."""
    runs = [recorded(n) for n in recorded_names() if n.startswith(prefix)]
    runs.sort(key=lambda r: (-len(r.config.seeds), r.path.name))
    rows, seen = [], set()
    for run in runs:
        device = run.meta.get("hardware", {}).get("device", "cpu")
        same = repr(dataclasses.replace(run.config, seeds=(0,)))  # the config but its seeds
        new = [s for s in run.config.seeds if (same, s, device) not in seen]
        seen |= {(same, s, device) for s in new}
        if not new:
            continue
        label = run.path.name.removeprefix(prefix + "-")
        counted = student_output_counts(run, label, prune_tol=prune_tol)
        rows += [row for row in counted if row.seed in new]
    order = {n: i for i, n in enumerate(recorded_names())}
    return sorted(rows, key=lambda r: order[f"{prefix}-{r.run}"])
