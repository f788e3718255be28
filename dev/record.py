"""Run a chapter's experiment in a profile, and record it in the checkout's
``gated_attention/recorded/`` with its provenance (it reads git, and writes where the package
ships its recorded runs: a repository tool, never installed with the package; a user runs an
experiment with ``python -m gated_attention run``).

    python -m dev.record EXPERIMENT [--profile paper] [--seeds 0 1] [--name NAME]
                         [--resume-from CHECKPOINT] [--budget cpu|cpu-x2|cpu-x4]

The run goes through the results cache (``experiments.run``) on the device
$GATED_ATTENTION_DEVICE names (default: the CPU). ``--name`` copies the entry to
``gated_attention/recorded/<name>/`` (``save_recorded``) with its provenance: the git commit,
whether the working tree differed, the command, the device; an entry above ``LARGE_MB`` (it goes
into git) needs ``--allow-large``. ``--budget``: the config of ``experiments.cpu_budget``.
``--resume-from``: see ``place_checkpoint``. Their use: book/reference.md, "Profiles".
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from gated_attention import experiments
from gated_attention.atomic import atomic_write
from gated_attention.engine import resolve_device
from gated_attention.experiments import recorded_runs
from gated_attention.experiments.cache import RunResult, read_entry
from gated_attention.experiments.cpu_budget import BUDGETS, cpu_config
from gated_attention.experiments.registry import EXPERIMENTS, experiment_config

__all__ = [
    "save_recorded",
    "EXPERIMENTS",
    "LARGE_MB",
    "config_for",
    "git_state",
    "place_checkpoint",
    "record",
    "main",
]

#: recorded runs live in git: an entry above this many megabytes needs --allow-large
LARGE_MB = 10.0

PACKAGE_ROOT = recorded_runs.RECORDED_ROOT.parent


def config_for(
    experiment: str,
    profile: str,
    seeds: tuple[int, ...] | None = None,
    budget: str | None = None,
) -> Any:
    """The config of ``experiment`` in ``profile`` (or at ``budget`` "cpu": ``cpu_budget``),
    with only ``seeds`` if given."""
    if budget is not None:
        config = cpu_config(experiment, budget)
    else:
        config = experiment_config(experiment, experiments.check_profile(profile))
    if seeds:
        config = dataclasses.replace(config, seeds=tuple(seeds))
    return config


def git_state(root: Path = PACKAGE_ROOT) -> dict:
    """The commit of the checkout holding ``root`` and whether the package's files (not its
    recorded runs) differ from it (``tree_clean``); both None outside a git checkout."""

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(out.stderr.strip())
        return out.stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        # the recorded runs are data this command writes, not code: left out of the check
        changed = git("status", "--porcelain", "--", str(root), f":(exclude){root / 'recorded'}")
    except (OSError, RuntimeError):
        return {"commit": None, "tree_clean": None}
    return {"commit": commit, "tree_clean": not changed}


#: beside an entry's checkpoint: the checkpoint from elsewhere that the run was resumed from
RESUMED_NOTE = "resumed_from.json"


def place_checkpoint(config: Any, checkpoint: str | os.PathLike) -> dict:
    """Copy ``checkpoint`` (written elsewhere) into the results entry of ``config`` as the one
    job's checkpoint, after checking it fits (the config's members, fewer steps than its budget),
    and note it there (``RESUMED_NOTE``, kept, so a run interrupted again and finished without
    ``--resume-from`` still names it); returns the note (file, sha256, step)."""
    src = Path(checkpoint)
    try:
        state = torch.load(src, weights_only=True, map_location="cpu")
        step, members = int(state["step"]), len(state["generators"])
    except Exception as err:  # noqa: BLE001 - any unreadable file gets the same clear message
        raise ValueError(
            f"checkpoint {src} cannot be read as a training checkpoint ({err})"
        ) from err
    jobs = config.jobs(resolve_device(None).type)
    if len(jobs) != 1:
        keys = ", ".join(job.key for job in jobs)
        raise ValueError(
            f"--resume-from continues an experiment of one job; {config.name} has {len(jobs)} "
            f"({keys}): put each job's checkpoint at <entry>/<key>.pt instead"
        )
    E, steps = len(jobs[0].members or config.members()), config.train.steps
    if members != E:
        raise ValueError(f"checkpoint {src} holds {members} members; the config has {E}")
    if not 0 < step < steps:
        raise ValueError(f"checkpoint {src} is at step {step}; resuming needs 0 < step < {steps}")
    entry = experiments.entry_path(config)
    if (entry / "manifest.json").exists():
        raise FileExistsError(f"the entry {entry} is already complete: nothing to resume")
    dest = entry / f"{jobs[0].key}.pt"  # the job's own checkpoint (experiments.protocol)
    if dest.exists():
        raise FileExistsError(
            f"{dest} exists (an interrupted run of this config): remove it to resume from "
            f"{src} instead, or drop --resume-from to resume from it"
        )
    entry.mkdir(parents=True, exist_ok=True)
    atomic_write(dest, lambda tmp: shutil.copyfile(src, tmp))
    note = {"file": src.name, "sha256": hashlib.sha256(src.read_bytes()).hexdigest(), "step": step}
    (entry / RESUMED_NOTE).write_text(json.dumps(note, indent=1) + "\n")
    return note


def record(
    experiment: str,
    profile: str = "paper",
    *,
    seeds: tuple[int, ...] | None = None,
    name: str | None = None,
    allow_large: bool = False,
    command: str | None = None,
    progress: bool = True,
    resume_from: str | os.PathLike | None = None,
    budget: str | None = None,
    replace: bool = False,
) -> tuple[experiments.RunResult, Path | None]:
    """Run ``experiment`` in ``profile`` (or at ``budget``) through the results cache; with
    ``name``, save the entry as a recorded run with its provenance (``replace``: over an existing
    one, see ``_save``). Returns (result, recorded folder or None). A RuntimeError when a run
    given ``resume_from`` did not resume from its step or later (nothing recorded)."""
    config = config_for(experiment, profile, seeds, budget)
    dev = resolve_device()
    if name is not None and name in experiments.recorded_names() and not replace:
        raise FileExistsError(f"recorded run {name!r} exists; remove it first to replace it")
    if resume_from is not None:
        place_checkpoint(config, resume_from)
    state = git_state()  # the code that trains: taken before a run that may last an hour
    result = experiments.run(config, progress=progress)
    note = result.path / RESUMED_NOTE
    resumed = json.loads(note.read_text()) if note.exists() else None
    if resumed is not None and result.metrics.get("resumed_from_step", 0) < resumed["step"]:
        raise RuntimeError(
            f"the run did not resume from {resumed['file']} at step {resumed['step']} "
            f"(resumed_from_step: {result.metrics.get('resumed_from_step')}); not recorded. "
            f"The finished entry is in the cache: {result.path}"
        )
    if name is None:
        return result, None
    size_mb = sum(f.stat().st_size for f in result.path.iterdir() if f.is_file()) / 1e6
    if size_mb > LARGE_MB and not allow_large:
        raise ValueError(
            f"the entry {result.path} holds {size_mb:.0f} MB, more than LARGE_MB = {LARGE_MB:g} "
            "MB for a file in git; pass --allow-large to record it anyway"
        )
    end = git_state()
    provenance = {
        **state,
        "code": "the package at that commit"
        + ("" if state["tree_clean"] else " plus uncommitted changes in the working tree")
        + ("" if end == state else "; the checkout changed while it ran (checkout_at_end)")
        + ("" if resumed is None else f"; resumed from step {resumed['step']} (resumed_from)"),
        "command": command
        or f"python -m dev.record {experiment} "
        + (f"--budget {budget}" if budget else f"--profile {profile}"),
        "run": f"device {dev}"
        + (f" ({result.meta['hardware'].get('device_name')})" if dev.type == "cuda" else "")
        + ("; loaded from the results cache" if result.cached else ""),
    }
    if end != state:
        provenance["checkout_at_end"] = end
    if resumed is not None:
        provenance["resumed_from"] = resumed
    return result, _save(result, name, provenance, replace)


def save_recorded(result: RunResult, name: str, **provenance: Any) -> Path:
    """Copy the entry of ``result`` to ``<recorded_runs.RECORDED_ROOT>/<name>`` with
    ``provenance`` (commit=..., command=...) as its provenance.json; returns the folder. An
    existing one is an error."""
    dest = recorded_runs.RECORDED_ROOT / name
    if dest.exists():
        raise FileExistsError(f"recorded run {dest} exists; remove it first to replace it")
    read_entry(result.path)  # intact, or ValueError naming the problem
    dest.mkdir(parents=True)
    for fname in ("tensors.pt", "meta.json", "manifest.json"):
        shutil.copy2(result.path / fname, dest / fname)
    (dest / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    return dest


def _save(result: experiments.RunResult, name: str, provenance: dict, replace: bool) -> Path:
    """Save ``result`` as the recorded run ``name``; with ``replace``, an existing one is kept
    aside while the new one is written and put back if writing fails."""
    old = recorded_runs.RECORDED_ROOT / name
    aside = Path(tempfile.mkdtemp()) / name if replace and old.exists() else None
    if aside is not None:
        shutil.move(str(old), aside)
    try:
        dest = save_recorded(result, name, **provenance)
    except BaseException:
        if aside is not None and not old.exists():
            shutil.move(str(aside), old)
        raise
    if aside is not None:
        shutil.rmtree(aside.parent, ignore_errors=True)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dev.record",
        description="Run a chapter's experiment (results cache) and optionally record it.",
    )
    parser.add_argument("experiment", choices=sorted(EXPERIMENTS))
    parser.add_argument("--profile", default="paper", help="smoke, quick or paper")
    parser.add_argument("--seeds", type=int, nargs="*", help="only these seeds")
    parser.add_argument("--name", help="record the finished run under this name")
    parser.add_argument("--allow-large", action="store_true", help=f"above {LARGE_MB:g} MB too")
    parser.add_argument("--resume-from", help="continue from this checkpoint file")
    parser.add_argument(
        "--budget", choices=BUDGETS, help="the CPU budget's config (experiments.cpu_budget)"
    )
    args = parser.parse_args(argv)
    command = shlex.join(["python", "-m", "dev.record", *(argv or sys.argv[1:])])
    result, dest = record(
        args.experiment,
        args.profile,
        seeds=tuple(args.seeds) if args.seeds else None,
        name=args.name,
        allow_large=args.allow_large,
        command=command,
        resume_from=args.resume_from,
        budget=args.budget,
    )
    print(f"entry: {result.path} ({'cached' if result.cached else 'computed'})")
    if dest is not None:
        print(f"recorded: {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
