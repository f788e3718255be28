"""How many output-gating neurons trained students keep (ours), beside the compressed count
d(d+1)/2 that no exact network undercuts (``constructions.compressed_output``): an ``OutputCount``
per member of the recorded teacher-identification runs (``teacher_members.member_rows``)."""

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


def student_output_counts(run, label: str) -> list[OutputCount]:
    """An ``OutputCount`` per member of the teacher-identification entry ``run``."""
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
        for r in member_rows(run, prune_tol=PRUNE_TOL)
    ]


def recorded_output_counts(prefix: str = "teacher-identification") -> list[OutputCount]:
    """``student_output_counts`` of every recorded run named ``prefix...``, each member once: one
    that two runs hold (same config but seeds, same seed and device) is read from the run with
    more seeds; a seed trained on a CPU and on a GPU is two members (two trajectories)."""
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
        rows += [row for row in student_output_counts(run, label) if row.seed in new]
    order = {n: i for i, n in enumerate(recorded_names())}
    return sorted(rows, key=lambda r: order[f"{prefix}-{r.run}"])
