"""Why the surplus neurons survive (ours, not the paper's): the consolidation of every trained
member of the teacher-identification runs (``analysis.consolidation``), as rows of numbers."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from .. import analysis, experiments
from ..analysis import consolidation
from ..analysis.consolidation import Consolidation


def consolidate_members(config, result, *, profile: str, prune_tol: float):
    """``consolidate_student`` of every member of the recorded paper-budget runs, then of this
    build's run ``result``. Returns ([(label, Consolidation)], [each member's weight decay])."""

    def one(trained, teacher, T):
        net = analysis.network(trained)
        return consolidation.consolidate_student(net, teacher, T=T, prune_tol=prune_tol)

    rows, wds = [], []
    for name in experiments.recorded_names():
        if not name.startswith("teacher-identification-paper"):
            continue
        rec = experiments.recorded(name)
        for trained, seed in zip(rec.students(), rec.config.seeds, strict=True):
            cons = one(trained, rec.config.task(seed).teacher, rec.config.T)
            rows.append((f"{name.removeprefix('teacher-identification-')} seed {seed}", cons))
            wds.append(rec.config.train.weight_decay)
    for seed, trained in zip(config.seeds, result.students(), strict=True):
        rows.append((f"{profile} seed {seed}", one(trained, config.task(seed).teacher, config.T)))
        wds.append(config.train.weight_decay)
    return rows, wds


@dataclasses.dataclass(frozen=True)
class ConsolidationRow:
    """One member's ``Consolidation``: of ``n_before``, ``kv`` + ``q`` in the key-value and query
    groups (the rest, lam in between, are kept); ``beyond_*``: a group's state energy beyond its
    top r directions (None: no such group); losses: MSE to the teacher; above ``break_even`` the
    consolidated network has the smaller loss + wd/2 |theta|^2 (both balanced)."""

    member: str
    n_before: int
    kv: int
    q: int
    n_after: int
    beyond_kv: float | None
    beyond_q: float | None
    fit_kv: float | None
    fit_q: float | None
    output_change: float
    loss_before: float
    loss_after: float
    penalty: float
    balanced_before: float
    balanced_after: float
    break_even: float


def consolidation_rows(rows: Sequence[tuple[str, Consolidation]]) -> list[ConsolidationRow]:
    """A ConsolidationRow per member (label, ``Consolidation``) of ``rows``."""
    out = []
    for label, c in rows:
        g = {grp.name: grp for grp in c.groups}
        kv, q = g.get("key-value"), g.get("query")
        out.append(
            ConsolidationRow(
                label,
                c.n_before,
                kv.size if kv else 0,
                q.size if q else 0,
                c.n_after,
                None if kv is None else 1.0 - kv.kept_energy,
                None if q is None else 1.0 - q.kept_energy,
                None if kv is None else kv.worst_fit_error,
                None if q is None else q.worst_fit_error,
                c.output_change,
                c.loss_before,
                c.loss_after,
                c.penalty_before,
                c.balanced_penalty_before,
                c.balanced_penalty_after,
                c.break_even_weight_decay,
            )
        )
    return out


def folded(rows: Sequence[tuple[str, Consolidation]], wds: Sequence[float]) -> list[str]:
    """The members that consolidation folds into fewer neurons with an output change below 1% and
    a break-even weight decay below their own (``wds``)."""
    return [
        label
        for (label, cons), wd in zip(rows, wds, strict=True)
        if cons.n_after < cons.n_before
        and cons.output_change < 1e-2
        and cons.break_even_weight_decay < wd
    ]
