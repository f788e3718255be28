"""Sec. 4.1 member by member: is each trained member of a teacher-identification run the
construction? (Fig. 2A/B, Table 1; the surplus neurons' state spectra are ours.) Every member
table of those chapters reads ``member_rows``."""

from __future__ import annotations

import dataclasses
import statistics

from .. import analysis
from .sweep_losses import normalised_losses

#: the symmetric construction's counts for d = 4: (hidden, lam ~ 1, lam ~ 0)
CONSTRUCTION = (14, 10, 4)
#: the pruning thresholds of the sweep (Fig. 2A): is pruning lossless at each?
THRESHOLDS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


@dataclasses.dataclass(frozen=True)
class MemberRow:
    """One trained member, reverse-engineered (``rev`` keeps the whole analysis)."""

    seed: int
    hidden: int
    lam_one: int
    lam_zero: int
    between: int
    output: int
    norm_loss: float
    score_kv: float
    score_q: float
    learned: bool
    merged: int  # output-gating groups that merge into one neuron
    rev: analysis.ReverseEngineering = dataclasses.field(repr=False, compare=False)
    loss: float = float("nan")  # held-out MSE (Table 1's loss)

    @property
    def counts(self) -> tuple[int, int, int]:
        """(hidden, lam ~ 1, lam ~ 0), as the construction's counts are given."""
        return self.hidden, self.lam_one, self.lam_zero


def member_rows(run, *, prune_tol: float) -> list[MemberRow]:
    """A row per member of ``run`` (a TeacherStudentConfig result with one size), in seed order."""
    config = run.config
    _, norm = normalised_losses(config, run.tensors["eval_loss"])
    rows = []
    for e, (student, seed) in enumerate(zip(run.students(), config.seeds, strict=True)):
        net, teacher = analysis.network(student), config.task(seed).teacher
        r = analysis.reverse_engineer(net, teacher, T=config.T, prune_tol=prune_tol)
        c = r.groups.counts()
        loss = float(norm[0, e])
        rows.append(
            MemberRow(
                seed=int(seed),
                hidden=r.pruned.net.n,
                lam_one=c["one"],
                lam_zero=c["zero"],
                between=c["between"],
                output=r.pruned.net.m,
                norm_loss=loss,
                loss=float(run.tensors["eval_loss"][e]),
                score_kv=r.score_kv,
                score_q=r.score_q,
                learned=analysis.learned(loss, r.score_kv, r.score_q),
                merged=len(r.merged.groups),
                rev=r,
            )
        )
    return rows


def fractions(rows: list[MemberRow]) -> dict:
    """(count, of, Wilson 95% interval) of ``rows`` pruned to exactly CONSTRUCTION, that learned
    the construction, and with a merging output group."""
    if not rows:
        raise ValueError("no members to count")
    R = len(rows)
    counts = {
        "construction_counts": sum(r.counts == CONSTRUCTION for r in rows),
        "learned": sum(r.learned for r in rows),
        "merge_found": sum(r.merged > 0 for r in rows),
    }
    return {key: (k, R, analysis.wilson_interval(k, R)) for key, k in counts.items()}


@dataclasses.dataclass(frozen=True)
class Share:
    """One fraction of ``fractions``: ``seeds`` of ``of``, Wilson 95% ``low`` to ``high``."""

    key: str
    seeds: int
    of: int
    low: float
    high: float


def shares(rows: list[MemberRow]) -> list[Share]:
    """The Shares of ``rows`` pruned to exactly 14 = 10 + 4 and that learned the construction."""
    f = fractions(rows)
    return [Share(key, *f[key][:2], *f[key][2]) for key in ("construction_counts", "learned")]


#: the ``analysis.selector_share`` from which a merged group is the construction's output neuron
SELECTOR_SHARE = 0.99


def held_out_values(rows: list[MemberRow]) -> list[tuple[str, float]]:
    """(id, value): Table 1's medians over ``rows`` (``table1.*_median``)."""
    if not rows:
        raise ValueError("no members")
    return [
        (f"table1.{key}_median", float(statistics.median(get(r) for r in rows)))
        for key, get in (
            ("loss", lambda r: r.loss),
            ("score_kv", lambda r: r.score_kv),
            ("score_q", lambda r: r.score_q),
            ("poly_distance", lambda r: r.rev.poly_distance),
        )
    ]


@dataclasses.dataclass(frozen=True)
class PruneStep:
    """One pruning threshold; ``change``: the largest change of the output on the probe inputs."""

    threshold: float
    hidden: int
    output: int
    change: float


def prune_sweep(net, x, thresholds=THRESHOLDS) -> list[PruneStep]:
    """A PruneStep per threshold: ``net`` pruned there, its change measured on ``x`` (B, T, d)."""
    steps = []
    for tol in thresholds:
        pr = analysis.prune(net, tol)
        steps.append(PruneStep(tol, pr.net.n, pr.net.m, analysis.output_change(net, pr.net, x)))
    return steps


@dataclasses.dataclass(frozen=True)
class Spectrum:
    """One group's ``analysis.state_spectrum``: ``within`` the largest neighbour ratio in the first
    ``shown`` (min(count, size)); ``drop`` the ratio right after ``count`` (None: no surplus)."""

    label: str
    group: str
    neurons: int
    shown: int
    count: int
    within: float
    drop: float | None
    values: tuple[float, ...]


def spectra(label: str, net: analysis.Network, groups, x, counts: dict[str, int]) -> list:
    """A Spectrum per group of ``groups`` (``LamGroups``) over ``x`` (B, T, d); ``counts``: group
    name ("key-value", "query") -> the construction's directions, as (groups.one, groups.zero)."""
    out = []
    for group, idx in zip(counts, (groups.one, groups.zero), strict=True):
        s = analysis.state_spectrum(net, x, idx)
        c = min(counts[group], len(s))
        within = max((float(s[i] / s[i + 1]) for i in range(c - 1)), default=float("nan"))
        drop = analysis.drop_after(s, counts[group])
        values = tuple(float(v) for v in s.numpy())
        out.append(Spectrum(label, group, len(idx), c, counts[group], within, drop, values))
    return out


def member_spectra(construction, rows: list[MemberRow], x, counts: dict[str, int]) -> list:
    """The spectra of ``construction``, then of each member's pruned network, over ``x``."""
    out = spectra("construction", construction, analysis.lam_groups(construction), x, counts)
    for row in rows:
        out += spectra(f"seed {row.seed}", row.rev.pruned.net, row.rev.groups, x, counts)
    return out


@dataclasses.dataclass(frozen=True)
class MachineRow:
    """One seed trained on one machine (``device``)."""

    seed: int
    device: str
    hidden: int
    lam_one: int
    lam_zero: int
    between: int
    output: int
    norm_loss: float


def machine_rows(found) -> list[MachineRow]:
    """A MachineRow per (run, MemberRow) of ``found``, by seed, stable."""
    rows = [
        MachineRow(
            row.seed,
            run.meta["hardware"]["device"],
            row.hidden,
            row.lam_one,
            row.lam_zero,
            row.between,
            row.output,
            row.norm_loss,
        )
        for run, row in found
    ]
    return sorted(rows, key=lambda r: r.seed)


def wilson_ends(n: int) -> tuple[float, float]:
    """(the Wilson 95% upper end of 0 of ``n``, the lower end of ``n`` of ``n``)."""
    return analysis.wilson_interval(0, n)[1], analysis.wilson_interval(n, n)[0]
