"""Where a run a chapter reads came from, as a row: trained here, the results cache or a recorded
run (``experiments.run_or_recorded``), and whether its training code has changed since."""

from __future__ import annotations

import dataclasses

from ..experiments.cache import RunResult, code_hash


@dataclasses.dataclass(frozen=True)
class Source:
    """One run as a chapter reads it."""

    run: str  # the results entry (a recorded run's name, or the cache folder)
    read: str  # "recorded run", "results cache" or "trained here"
    seconds: int  # its training's wall time
    commit: str  # the commit that trained a recorded run ("-" otherwise)
    machine: str  # where a recorded run trained ("-" otherwise)
    code: str  # a recorded run's training code today: "unchanged" or "changed" ("-" otherwise)


def _machine(meta: dict) -> str:
    hw = meta.get("hardware", {})
    threads = hw.get("torch_threads")
    where = hw.get("device", "cpu")
    return f"{where}, {threads} thread{'s' if threads != 1 else ''}" if threads else where


def source(result: RunResult) -> Source:
    """``result`` (``experiments.run_or_recorded``) as a row."""
    wall = result.meta.get("wall_time_s")
    seconds = -1 if wall is None else round(float(wall))  # -1: not recorded
    name = result.path.name
    if result.provenance:
        commit = str(result.provenance.get("commit") or "unknown")[:7]
        # whether the code that trains its config today is the code that trained it
        same = result.meta.get("code_hash") == code_hash(config=result.config)
        code = "unchanged" if same else "changed"
        return Source(name, "recorded run", seconds, commit, _machine(result.meta), code)
    read = "results cache" if result.cached else "trained here"
    return Source(name, read, seconds, "-", "-", "-")


@dataclasses.dataclass(frozen=True)
class Recorded:
    """A recorded run, as a chapter lists it beside others."""

    run: str
    paper_profile: str  # "yes", "no", or "-" when no paper config was given
    seeds: int
    steps: int
    device: str  # the GPU's name, else the CPU model
    minutes: int
    commit: str


def recorded(name: str, run, paper_config=None) -> Recorded:
    """The row of the recorded run ``name``; ``paper_config``: the paper profile's, if known."""
    c, meta = run.config, run.meta
    paper = "-" if paper_config is None else ("yes" if c == paper_config else "no")
    hw = meta["hardware"]
    return Recorded(
        run=name,
        paper_profile=paper,
        seeds=len(c.seeds),
        steps=c.train.steps,
        device=hw.get("device_name") or hw["cpu"],
        minutes=round(meta["wall_time_s"] / 60),
        commit=(run.provenance.get("commit") or "unknown")[:7],
    )
