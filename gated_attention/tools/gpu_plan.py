"""The paper-profile runs not yet recorded, their predicted time on one GPU, and one command
that trains them all there.

    python -m gated_attention.tools.gpu_plan              the plan: each run, its jobs on a GPU,
                                                          steps, members, predicted device time
    python -m gated_attention.tools.gpu_plan --run        train every run of the plan, one after
        [--profile paper] [--only NAME ...]               another, each recorded as
                                                          ``<name>-<profile>-gpu``

What is planned: every registered experiment (``registry.EXPERIMENTS``) whose paper profile has
no recorded run (a recorded run named ``<name>-paper`` or ``<name>-paper-...``).

The prediction, per job of the experiment's GPU plan (``config.jobs("cuda")``: a size sweep is
one ensemble there), is steps x the time of one step of an ensemble of that many members, from
the recorded GPU bench (``recorded/bench-<gpu>.json``): one student (``engine_steps_per_s``) and
the 16-member ensemble (``batched_steps_per_s``), linear in the members in between and beyond.
Why linear in members: the fused step itself dispatches the same operations for any number of
members (``bench_ways.dispatch_counts``: flat without its data), while in the recorded bench every
member drew its own data on the host. That bench predates the data drawn on the GPU
(``train(data_on_device=...)``) and the compiled mode, so for the runs they apply to the
prediction is an upper bound until a GPU bench of today's engine is recorded. What it leaves
out, said in the table: a family other than the gated RNN of Eq. (2) (its step was not measured
on a GPU: predicted as the gated RNN's, which is fast, so the prediction is a lower bound
there), and sizes (a GPU step of these small networks is launch-bound, not size-bound).

The command trains through ``tools.record`` (the results cache: each job checkpoints and
resumes; a finished run is loaded, not trained again), so an interrupted ``--run`` continues
where it stopped when started again. Runs go one after another: one GPU, and the host's cores
draw every member's data.
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import Any

import torch

from ..experiments.recorded_runs import recorded_names
from ..experiments.registry import EXPERIMENTS, NEEDS, experiment_config
from .bench import recorded_benches
from .record import record

__all__ = ["missing_runs", "plan", "predict_ms", "format_plan", "run_plan", "main"]


def missing_runs(profile: str = "paper") -> list[str]:
    """The registered experiments without a recorded run of ``profile``."""
    have = recorded_names()
    return [
        name
        for name in EXPERIMENTS
        if not any(r == f"{name}-{profile}" or r.startswith(f"{name}-{profile}-") for r in have)
    ]


def _stand_in(config: Any) -> Any:
    """An lr-sweep entry whose first rate wins (the plan needs the jobs, not the rates)."""
    loss = torch.arange(len(config.groups()), dtype=torch.float64)[:, None]
    return SimpleNamespace(tensors={"eval_loss": loss.expand(-1, len(config.seeds))})


def _config(name: str, profile: str) -> Any:
    if name in NEEDS:
        return experiment_config(name, profile, resolve=_stand_in)
    return experiment_config(name, profile)


def _steps(config: Any, job: Any) -> int:
    """Training steps of one job: a recall gating "io-ce" trains ``ce_train``; a family of the
    Fig. 4B setup check trains each rate of its search, then its scored run."""
    if job.part == "io-ce" and hasattr(config, "ce_train"):
        return int(config.ce_train.steps)
    if hasattr(config, "pilots"):  # a set of pilots: each job trains its own pilot
        return int(config.pilots[int(job.part)].train.steps)
    steps = int(config.train.steps) if hasattr(config, "train") else int(config.steps)
    if job.key.startswith("family-") and hasattr(config, "lr_grid"):
        return steps * (len(config.lr_grid) + 1)
    return steps


def _members(config: Any, job: Any) -> int:
    """Members trained together in one job."""
    if job.members:
        return len(job.members)
    if job.part in getattr(config, "gatings", ()):
        return len(config.members(job.part))
    return len(getattr(config, "seeds", (0,)))


def predict_ms(members: int, bench: dict) -> float:
    """ms of one step of an ensemble of ``members`` on the bench's GPU (module docstring)."""
    one = 1e3 / bench["engine_steps_per_s"]
    sixteen = 1e3 * 16 / bench["batched_steps_per_s"]
    return one + (members - 1) * (sixteen - one) / 15


def plan(profile: str = "paper", gpu: str | None = None, names: list[str] | None = None) -> dict:
    """{"gpu", "runs": [{"name", "jobs", "steps", "members", "device_s", "gated_only"}],
    "total_s"} for the missing runs of ``profile`` (or ``names``)."""
    benches = recorded_benches()
    if not benches:
        raise ValueError("no recorded GPU bench (recorded/bench-<gpu>.json) to predict from")
    gpu = gpu or sorted(benches)[0]
    bench = benches[gpu]
    runs = []
    for name in names or missing_runs(profile):
        config = _config(name, profile)
        jobs = config.jobs("cuda")
        seconds, steps, members = 0.0, 0, 0
        for job in jobs:
            s, m = _steps(config, job), _members(config, job)
            seconds += s * predict_ms(m, bench) / 1e3
            steps, members = steps + s, max(members, m)
        families = set(getattr(config, "families", ("gated",)))
        runs.append(
            {
                "name": name,
                "jobs": len(jobs),
                "steps": steps,
                "members": members,
                "device_s": seconds,
                "gated_only": families <= {"gated"},
            }
        )
    return {"gpu": gpu, "runs": runs, "total_s": sum(r["device_s"] for r in runs)}


def format_plan(p: dict) -> str:
    """The plan as a table, the total and what the prediction leaves out."""
    head = f"{'run (paper profile, not recorded)':<40} {'jobs':>5} {'steps':>11} {'members':>8}"
    lines = [f"predicted on the recorded {p['gpu']} bench", f"{head} {'device time':>12}"]
    for r in p["runs"]:
        mark = "" if r["gated_only"] else " *"
        lines.append(
            f"{r['name']:<40} {r['jobs']:>5} {r['steps']:>11,} {r['members']:>8} "
            f"{r['device_s'] / 60:>9.1f} min{mark}"
        )
    lines.append(f"{'total':<40} {'':>5} {'':>11} {'':>8} {p['total_s'] / 60:>9.1f} min")
    lines.append("* other families' steps predicted as the gated RNN's: a lower bound")
    return "\n".join(lines)


def run_plan(profile: str = "paper", names: list[str] | None = None, progress: bool = True):
    """Train and record every run of the plan, one after another (``tools.record``); a run
    already recorded under its name is skipped. Returns the recorded folders."""
    out = []
    have = set(recorded_names())
    for name in names or missing_runs(profile):
        label = f"{name}-{profile}-gpu"
        if label in have:
            continue
        _, folder = record(name, profile, name=label, progress=progress)
        out.append(folder)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gated_attention.tools.gpu_plan", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--profile", default="paper", help="smoke, quick or paper")
    parser.add_argument("--only", nargs="*", help="these experiments (default: the missing runs)")
    parser.add_argument("--run", action="store_true", help="train and record them here")
    args = parser.parse_args(argv)
    names = args.only or None
    try:
        print(format_plan(plan(args.profile, names=names)))
    except ValueError as err:  # no recorded GPU bench: nothing to predict from, still runnable
        print(f"no prediction: {err}")
    if args.run:
        for folder in run_plan(args.profile, names):
            print(f"recorded: {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
