"""Sec. 4.1's recorded runs (the paper-budget runs of the tuning seeds, the twenty held-out
seeds of the quick configuration): where each ran, its members, and the state spectra of
their surplus groups (ours)."""

from __future__ import annotations

import dataclasses

from .. import experiments
from .teacher_members import member_rows, spectra


@dataclasses.dataclass(frozen=True)
class RunFacts:
    """Where and how a recorded run trained; ``paper_profile``: the paper's config but seeds;
    ``resumed``: the step it resumed from (0: never), ``minutes`` then of the steps after it."""

    name: str
    seeds: tuple[int, ...]
    same_seeds: bool
    paper_profile: bool
    n: int
    T: int
    steps: int
    lr: float
    weight_decay: float
    device: str
    device_name: str
    cpu: str
    cores: int
    threads: int
    torch: str
    finished: str
    resumed: int
    minutes: float
    code_hash: str
    commit: str
    package_hash: str


def run_facts(run, paper) -> RunFacts:
    """The RunFacts of the recorded run ``run``; ``paper``: the paper profile's config."""
    pc, meta, m = run.config, run.meta, run.metrics
    hw = meta["hardware"]
    return RunFacts(
        name=run.path.name,
        seeds=tuple(pc.seeds),
        same_seeds=pc.seeds == paper.seeds,
        paper_profile=pc == dataclasses.replace(paper, seeds=pc.seeds),
        n=pc.n,
        T=pc.T,
        steps=pc.train.steps,
        lr=pc.train.lr,
        weight_decay=pc.train.weight_decay,
        device=hw["device"],
        device_name=hw.get("device_name", ""),
        cpu=hw["cpu"],
        cores=hw["cpu_count"],
        threads=hw["torch_threads"],
        torch=meta["torch_version"],
        finished=meta["created_utc"],
        resumed=m["resumed_from_step"],
        minutes=m["train_wall_time_s"] / 60,
        code_hash=meta["code_hash"][:12],
        commit=run.provenance["commit"][:7],
        package_hash=experiments.code_hash()[:12],
    )


def paper_members(runs, x, counts: dict[str, int], *, prune_tol: float):
    """([(run, MemberRow)], [Spectrum]) of every member of the paper-budget ``runs`` (``spectra``
    over ``x`` of its groups; ``counts``: the construction's count per group)."""
    found, shown = [], []
    for run in runs:
        for row in member_rows(run, prune_tol=prune_tol):
            found.append((run, row))
            net = row.rev.pruned.net
            shown += spectra(f"paper seed {row.seed}", net, row.rev.groups, x, counts)
    return found, shown


@dataclasses.dataclass(frozen=True)
class Drops:
    """Over the ``surplus`` spectra with a surplus: ``above`` those whose drop exceeds every ratio
    within, ``over_ten``; the lowest and highest drop and largest within (NaN: none)."""

    surplus: int
    above: int
    over_ten: int
    all_above: bool
    low: float
    high: float
    within: float


def drops(shown) -> Drops:
    """The Drops of the spectra ``shown`` that have a surplus."""
    pairs = [(s.within, s.drop) for s in shown if s.drop is not None]
    nan = float("nan")
    return Drops(
        surplus=len(pairs),
        above=sum(drop > within for within, drop in pairs),
        over_ten=sum(drop > 10 for _, drop in pairs),
        all_above=all(drop > within for within, drop in pairs),
        low=min((d for _, d in pairs), default=nan),
        high=max((d for _, d in pairs), default=nan),
        within=max((w for w, _ in pairs), default=nan),
    )
