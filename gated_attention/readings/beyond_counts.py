"""How many output-gating neurons trained students keep, beside the compressed count.

The compressed output gating (``constructions.compressed_output``) needs d(d+1)/2
output-gating neurons and no exact network needs fewer; this module reads the
teacher-identification students that ship as recorded runs (``experiments.recorded``),
reverse-engineers each member as the teacher-identification chapter does
(``analysis.reverse_engineer``: prune at ``prune_tol``, lam groups, scores) and returns one row
per member. It reads experiment results, so it sits in ``readings``, above ``experiments``.

Glossary (code name -> meaning):
    OutputCount   one member: run, seed, pruned n and m, merged m, lam counts, learned
"""

from __future__ import annotations

import dataclasses

from ..analysis.boundary import network
from ..analysis.reverse_engineer import reverse_engineer
from ..analysis.success import learned
from ..analysis.thresholds import PRUNE_TOL
from ..experiments import recorded, recorded_names
from .sweep_losses import normalised_losses

__all__ = ["OutputCount", "student_output_counts", "recorded_output_counts"]


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


def student_output_counts(
    run,
    label: str,
    *,
    prune_tol: float = PRUNE_TOL,
) -> list[OutputCount]:
    """One ``OutputCount`` per member of the teacher-identification entry ``run``."""
    config = run.config
    _, nl = normalised_losses(config, run.tensors["eval_loss"])
    rows = []
    for e, (student, seed) in enumerate(zip(run.students(), config.seeds, strict=True)):
        teacher = config.task(seed).teacher
        r = reverse_engineer(network(student), teacher, T=config.T, prune_tol=prune_tol)
        c = r.groups.counts()
        loss = float(nl[0, e])
        rows.append(
            OutputCount(
                run=label,
                seed=int(seed),
                n=r.pruned.net.n,
                m=r.pruned.net.m,
                m_merged=r.merged.net.m,
                lam_one=c["one"],
                lam_zero=c["zero"],
                normalised_loss=loss,
                learned=bool(learned(loss, r.score_kv, r.score_q)),
            )
        )
    return rows


def recorded_output_counts(
    prefix: str = "teacher-identification", *, prune_tol: float = PRUNE_TOL
) -> list[OutputCount]:
    """``student_output_counts`` of every recorded run whose name starts ``prefix``, each
    member once: a member that two recorded runs hold (the same config apart from its seeds,
    the same seed, the same kind of device: one training) is read from the run with more
    seeds (the quick profile's own run is also part of its twenty-seed run). A seed trained on
    a CPU and on a GPU is two members (the rounding makes two trajectories)."""
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
