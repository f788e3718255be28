"""The campaign: every run of a profile not yet recorded, central claims first, within a time
budget, in a pack that a later call (or another machine) resumes from.

    python -m lab.campaign --budget-s 540 --out OUT [--from-pack DIR]
        [--profile paper] [--only NAME ...]
    python -m lab.campaign --import-pack DIR     (into this checkout)

Order (``order``): the runs that decide the paper's learning claims first (``CENTRAL``: Fig. 3A,
Fig. 3B, Fig. 4A and 4B each after its rate search, Sec. 4.1, App. D.3, Sec. 5.2), then every
other registered experiment without a recorded run of the profile (``gpu_plan.missing_runs``).

The campaign is a policy over the one runner (``experiments.runner``), not a runner of its own:
it decides the order, the budget and the pack. Each run trains in a process of its own
(``python -m dev.record NAME --profile P``: ``experiments.run``, whose jobs go
through ``runner.compute``; on a GPU with $GATED_ATTENTION_SIDE_BY_SIDE jobs of the run side by
side, the runner's ``Streams`` executor) through a results cache that the campaign owns
(``OUT/cache``). The process is the budget: a job of a paper run outlasts a call, so at the budget
the process is interrupted (then killed after ``GRACE_S``) and keeps its last checkpoint, and the
next call resumes it from there (``runner.run_all``'s budget only keeps jobs from starting).
A finished run is written as a recorded run into
``OUT/recorded/<name>-<profile>-<gpu|cpu>/`` (the entry, with its provenance: the commit, the
command, the device, the campaign), never into the package.

The pack (``pack``): ``OUT/recorded`` and ``OUT/cache`` in one xz-compressed tar, split into
parts of at most ``PART_MB`` MiB, at most ``MAX_PARTS`` of them (what one transfer of files
carries); a pack over that is refused with its size, before anything is lost. The code the
runs compiled (``OUT/compiled``, inductor's cache) goes in too where it still fits: on the same
kind of machine a resumed call then loads it instead of compiling again (minutes a job).
``--from-pack`` restores a pack into ``OUT`` before training (the resume); ``--import-pack``
copies its recorded runs into ``gated_attention/recorded/`` (an existing one is never replaced)
and its cache into the results cache, so that the chapters read them.

Glossary (code name -> meaning):
    CENTRAL     the experiments of the central learning claims, in campaign order
    Outcome     what one call did: finished, stopped (at the budget), failed, left (not started)
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from dev.record import git_state
from gated_attention.experiments.cache import RECORDED_ROOT, read_entry
from gated_attention.experiments.recorded_runs import recorded_names
from gated_attention.experiments.registry import EXPERIMENTS
from lab.gpu_plan import CENTRAL_CLAIMS, missing_runs

__all__ = ["CENTRAL", "Outcome", "order", "label", "campaign", "pack", "unpack", "main"]

#: the experiments of the central learning claims, in the order the campaign trains them
CENTRAL = (
    *CENTRAL_CLAIMS,
    "teacher-identification",
    "associative-recall",
    "in-context-regression",
)

#: one part of a pack, and how many parts one transfer carries
PART_MB, MAX_PARTS = 16, 8
#: the folder of a campaign that holds inductor's cache ($TORCHINDUCTOR_CACHE_DIR of its runs)
COMPILED = "compiled"

#: seconds a stopped run has to exit after its interrupt, before it is killed
GRACE_S = 30.0

#: a runner: (experiment, profile, cache folder, seconds left) -> "finished" | "stopped" | error
Runner = Callable[[str, str, Path, float], str]

#: the repository root, where ``python -m dev.record`` runs
REPOSITORY = Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Outcome:
    """What one call of ``campaign`` did, run by run."""

    finished: list[str] = dataclasses.field(default_factory=list)  # recorded names
    stopped: list[str] = dataclasses.field(default_factory=list)  # experiments, at the budget
    failed: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (name, error)
    left: list[str] = dataclasses.field(default_factory=list)  # not started: no budget left


def order(names: Sequence[str]) -> list[str]:
    """``names`` in campaign order: those of ``CENTRAL`` first (in its order), then the rest
    in their given order."""
    central = [n for n in CENTRAL if n in names]
    return central + [n for n in names if n not in CENTRAL]


def label(name: str, profile: str, device: str) -> str:
    """The recorded name of a campaign's run: ``<name>-<profile>-gpu`` on a GPU, else ``-cpu``."""
    return f"{name}-{profile}-{'gpu' if device.startswith('cuda') else 'cpu'}"


def record_runner(name: str, profile: str, cache: Path, seconds: float) -> str:
    """Train ``name`` in ``profile`` in a process of its own, through the results cache
    ``cache``, for at most ``seconds``: "finished", "stopped" (interrupted at the budget, then
    killed after ``GRACE_S``), or the last lines of its error output."""
    cmd = [sys.executable, "-m", "dev.record", name, "--profile", profile]
    env = {**os.environ, "GATED_ATTENTION_CACHE": str(cache), "TQDM_DISABLE": "1"}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache.parent / COMPILED)  # compiled once, packed
    proc = subprocess.Popen(
        cmd, env=env, cwd=REPOSITORY, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        _, err = proc.communicate(timeout=max(seconds, 0.0))
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        return "stopped"
    if proc.returncode == 0:
        return "finished"
    return "\n".join(err.decode(errors="replace").strip().splitlines()[-5:])


def campaign(
    out: str | os.PathLike,
    budget_s: float,
    *,
    profile: str = "paper",
    names: Sequence[str] | None = None,
    device: str | None = None,
    runner: Runner = record_runner,
) -> Outcome:
    """Train the runs ``names`` (default: every experiment of ``profile`` not yet recorded), in
    campaign order, within ``budget_s`` seconds, through the cache ``out/cache``; each finished
    run goes into ``out/recorded/<label>/``. A run already there is skipped (a later call
    resumes the others: a stopped run from its last checkpoint)."""
    out = Path(out)
    cache, outbox = out / "cache", out / "recorded"
    cache.mkdir(parents=True, exist_ok=True)
    outbox.mkdir(parents=True, exist_ok=True)
    device = device or os.environ.get("GATED_ATTENTION_DEVICE", "cpu")
    unknown = sorted(set(names or ()) - set(EXPERIMENTS))
    if unknown:
        raise ValueError(f"unknown experiments {unknown}; known: {', '.join(EXPERIMENTS)}")
    todo = order(list(names) if names else missing_runs(profile))
    outcome = Outcome()
    end = time.monotonic() + budget_s
    for name in todo:
        dest = label(name, profile, device)
        if (outbox / dest).exists() or dest in recorded_names():
            continue
        left = end - time.monotonic()
        if left <= 0:
            outcome.left.append(name)
            continue
        said = runner(name, profile, cache, left)
        if said == "stopped":
            outcome.stopped.append(name)
        elif said != "finished":
            outcome.failed.append((name, said))
        else:
            _write_recorded(name, profile, cache, outbox / dest, device)
            outcome.finished.append(dest)
    return outcome


def _write_recorded(name: str, profile: str, cache: Path, dest: Path, device: str) -> None:
    """The finished entry of ``name`` (the one entry of ``cache`` with its name and a manifest,
    the latest), copied to ``dest`` with its provenance."""
    entries = [
        p
        for p in cache.glob(f"{name}-*")
        if (p / "manifest.json").exists()
        and json.loads((p / "meta.json").read_text())["config"]["fields"]["name"] == name
    ]
    if not entries:
        raise RuntimeError(f"{name} finished but its entry is not in {cache}")
    entry = max(entries, key=lambda p: (p / "manifest.json").stat().st_mtime)
    read_entry(entry)  # intact, or ValueError naming the problem
    dest.mkdir(parents=True)
    for fname in ("tensors.pt", "meta.json", "manifest.json"):
        shutil.copy2(entry / fname, dest / fname)
    provenance = {
        **git_state(),
        "code": "the package at that commit",
        "command": f"python -m lab.campaign --profile {profile} (run {name})",
        "run": f"device {device}; trained by a campaign, possibly over several calls resumed "
        "from their checkpoints",
    }
    (dest / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")


def _tar(out: Path, parts: tuple[str, ...]) -> bytes:
    """The folders ``parts`` of ``out`` (those that exist) as one xz-compressed tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for part in parts:
            if (out / part).exists():
                tar.add(out / part, arcname=part)
    return buf.getvalue()


def pack(out: str | os.PathLike, dest: str | os.PathLike) -> list[Path]:
    """``out/recorded``, ``out/cache`` and, where it still fits, ``out/compiled`` (inductor's
    cache: a later call on the same kind of machine skips compiling) as
    ``dest/campaign.tar.xz.NN`` parts of at most ``PART_MB`` MiB; more than ``MAX_PARTS``
    parts without the compiled code is a ValueError (nothing is written)."""
    out, dest = Path(out), Path(dest)
    size = int(PART_MB * 2**20)
    data = _tar(out, ("recorded", "cache", COMPILED))
    if len(data) > MAX_PARTS * size:  # the compiled code is only a saving: left out first
        data = _tar(out, ("recorded", "cache"))
    n = max(1, -(-len(data) // size))
    if n > MAX_PARTS:
        raise ValueError(
            f"the pack holds {len(data) / 2**20:.1f} MiB: more than {MAX_PARTS} parts of "
            f"{PART_MB} MiB; record and remove finished runs from {out} first"
        )
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = dest / f"campaign.tar.xz.{i:02d}"
        path.write_bytes(data[i * size : (i + 1) * size])
        paths.append(path)
    return paths


def unpack(
    src: str | os.PathLike, out: str | os.PathLike, *, recorded_root: Path | None = None
) -> list[str]:
    """Restore the pack in ``src`` into ``out`` (``recorded/`` and ``cache/``); with
    ``recorded_root``, also copy its recorded runs there (an existing one is kept, not
    replaced). Returns the recorded names the pack holds."""
    parts = sorted(Path(src).glob("campaign.tar.xz.*"))
    if not parts:
        raise FileNotFoundError(f"no pack (campaign.tar.xz.NN) in {src}")
    data = b"".join(p.read_bytes() for p in parts)
    out = Path(out)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as tar:
            tar.extractall(out, filter="data")
    except (tarfile.TarError, EOFError, OSError) as err:
        raise ValueError(f"the pack in {src} is damaged or incomplete ({err})") from None
    names = sorted(p.name for p in (out / "recorded").glob("*") if p.is_dir())
    if recorded_root is not None:
        for name in names:
            if not (recorded_root / name).exists():
                shutil.copytree(out / "recorded" / name, recorded_root / name)
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.campaign", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--profile", default="paper", help="smoke, quick or paper")
    parser.add_argument("--only", nargs="*", help="these experiments (default: the missing runs)")
    parser.add_argument("--budget-s", type=float, help="seconds of training, all runs together")
    parser.add_argument("--out", default="campaign", help="the campaign's folder")
    parser.add_argument("--from-pack", help="restore this pack into --out first (resume)")
    parser.add_argument("--pack-to", help="write the pack here at the end")
    parser.add_argument("--import-pack", help="copy a pack's recorded runs into the package")
    args = parser.parse_args(argv)
    if args.import_pack:
        names = unpack(args.import_pack, args.out, recorded_root=RECORDED_ROOT)
        print(f"recorded runs in the pack: {', '.join(names) or 'none'}")
        return 0
    if args.budget_s is None:
        parser.error("--budget-s is needed to train (or --import-pack)")
    if args.from_pack:
        unpack(args.from_pack, args.out)
    result = campaign(args.out, args.budget_s, profile=args.profile, names=args.only)
    print(f"finished and recorded: {', '.join(result.finished) or 'none'}")
    print(f"stopped at the budget (resume with --from-pack): {', '.join(result.stopped) or 'none'}")
    print(f"not started: {', '.join(result.left) or 'none'}")
    for name, err in result.failed:
        print(f"FAILED {name}:\n{err}")
    if args.pack_to:
        for path in pack(args.out, args.pack_to):
            print(f"pack: {path} ({path.stat().st_size / 2**20:.1f} MiB)")
    return 1 if result.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
