"""The paper-profile runs not yet recorded, their predicted time on one GPU, and one command
that trains them all there.

    python -m lab.gpu_plan              the plan: each run, its jobs on a GPU,
                                                          steps, members, predicted device time;
                                                          then the central claims at the
                                                          paper's steps, in parts
    python -m lab.gpu_plan --central    only the latter
        [--mode compiled]                                 every step counted in that mode
    python -m lab.gpu_plan --run        train every run of the plan, one after
        [--profile paper] [--only NAME ...]               another, each recorded as
                                                          ``<name>-<profile>-gpu``

What is planned: every registered experiment (``registry.EXPERIMENTS``) whose paper profile has
no recorded run (a recorded run named ``<name>-paper`` or ``<name>-paper-...``).

The prediction, per job of the experiment's GPU plan (``config.jobs("cuda")``: a size sweep
splits there by a GPU's cost, ``engine.plan_ensembles``), is its steps x the device time of one
step of that job's own run, the larger of its kernels x the time of a kernel and its FLOPs / the
GPU's matmul peak, both counted on this CPU and calibrated on the recorded GPU bench
(``device_time``); under it, the floor: the runs' products with every member at its own size
at that peak (``own_sizes``). The runs of the central
claims (``CENTRAL_CLAIMS``) are also predicted at the paper's steps (``paper_steps``: Fig. 4A
and 4B train fewer in the paper profile here), and cut into parts of at most ``PART_S`` of
device time, most central first: what one campaign call gets (``lab.campaign``). Each run's
step is counted in its own training mode (``--mode``: in that one instead); the recorded bench
predates the data drawn on the GPU and mode "compiled", so a kernel's time is that of the
graphed fast step it timed. The counts are kept between calls (``kept_counts``: in
``--counts``, default _build/step-counts.json, while the code, torch and this CPU stay the
same; ``--recount`` counts afresh): a step is counted, and compiled, once.

The command trains through ``dev.record`` (the results cache: each job checkpoints and
resumes; a finished run is loaded, not trained again), so an interrupted ``--run`` continues
where it stopped when started again. Runs go one after another: one GPU, and the host's cores
draw every member's data.
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import Any

import torch

from dev.record import record
from gated_attention.experiments.in_context_regression import RegressionConfig
from gated_attention.experiments.recorded_runs import recorded_names
from gated_attention.experiments.registry import (
    CENTRAL_CLAIMS,
    EXPERIMENTS,
    NEEDS,
    experiment_config,
)
from gated_attention.experiments.side_by_side import SIDE_BY_SIDE_ENV, side_by_side
from gated_attention.experiments.teacher_student import TeacherStudentConfig
from lab.bench import recorded_benches
from lab.device_time import (
    calibrate,
    flops_per_step,
    job_run,
    kernel_key,
    run_key,
    step_kernels,
    step_seconds,
)
from lab.kept_counts import DEFAULT_PATH, kept_counts
from lab.own_sizes import own_size_config, own_size_runs, per_parameter
from lab.plan_text import format_plan

__all__ = [
    "CENTRAL_CLAIMS",
    "missing_runs",
    "paper_steps",
    "plan",
    "parts",
    "format_plan",
    "format_parts",
    "run_plan",
    "main",
]

#: the most device time one call of the campaign gets (a part of the plan)
PART_S = 540.0


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


def plan_config(name: str, profile: str) -> Any:
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


def paper_steps() -> dict[str, int]:
    """The paper's steps for each training run of the central claims whose paper profile here
    trains fewer (Fig. 4A: Sec. 4.1's teacher-student budget; Fig. 4B: Sec. 5's)."""
    return {
        "architectures-teacher": TeacherStudentConfig().train.steps,
        "architectures-regression": RegressionConfig().train.steps,
    }


def job_steps(config: Any, job: Any, name: str, at_paper_steps: bool) -> int:
    """``_steps``, or with ``at_paper_steps`` the paper's steps for a run of ``paper_steps``."""
    steps = _steps(config, job)
    if at_paper_steps and name in paper_steps():
        steps = steps // int(config.train.steps) * paper_steps()[name]
    return steps


def plan(
    profile: str = "paper",
    gpu: str | None = None,
    names: list[str] | None = None,
    *,
    at_paper_steps: bool = False,
    counted: dict | None = None,
    mode: str | None = None,
    side_by_side: int = 1,
) -> dict:
    """{"gpu", "calibration", "runs": [{"name", "jobs", "steps", "members", "kernels", "gflop",
    "launch_s", "arithmetic_s", "floor_s", "compile_s", "device_s", "gated_only", "speedup"}],
    "total_s", "arithmetic_s", "floor_s", "fused_s", "launch_s", "launch_fused_s", "compile_s",
    "mode", "side_by_side"} for the missing runs of ``profile`` (or ``names``), each job's
    step counted (``device_time``) and its compiling measured; ``at_paper_steps``: the runs
    of ``paper_steps`` at the paper's steps;
    ``mode``: every step counted in that training mode (None: each run's own);
    ``side_by_side``: up to that many jobs of a run at once (``with_side_by_side``).
    ``counted``: the counts of steps already counted (``_counts``, filled in).
    "arithmetic_s": the jobs' FLOPs as they train (padded members included) at the GPU's
    matmul peak, what no fewer kernels and no jobs side by side can go under; "floor_s": the
    same with every member at its own size (``own_sizes``), what no grouping goes under
    either; "fused_s" (and each run's "device_fused_s"): the total with each kernel that
    ``torch.compile`` generates one launch (``step_kernels``' "kernels_fused", a lower
    estimate; "total_s" counts its loop nests, an upper one), one job at a time; "launch_s",
    "launch_fused_s" and "compile_s": the runs' kernels alone (in both counts) and their
    compiling (``plan_text.kernels_line``)."""
    benches = recorded_benches()
    if not benches:
        raise ValueError("no recorded GPU bench (recorded/bench-<gpu>.json) to predict from")
    gpu = gpu or sorted(benches)[0]
    calibration = calibrate(benches[gpu])
    calibration["side_by_side"] = benches[gpu].get("side_by_side")  # None: not measured
    counted = {} if counted is None else counted
    runs = [
        with_side_by_side(_plan_run(name, profile, calibration, counted, (at_paper_steps, mode)),
                calibration["side_by_side"], side_by_side)
        for name in names or missing_runs(profile)
    ]  # fmt: skip
    total = sum(r["device_s"] for r in runs)
    out = {"gpu": gpu, "calibration": calibration, "runs": runs, "total_s": total, "mode": mode}
    arithmetic = sum(r["arithmetic_s"] for r in runs)
    fused = sum(r["device_fused_s"] for r in runs)
    floor = sum(r["floor_s"] for r in runs)
    per = sum(r["per_parameter_s"] for r in runs)
    out.update(arithmetic_s=arithmetic, fused_s=fused, floor_s=floor, per_parameter_s=per)
    out.update({k: sum(r[k] for r in runs) for k in ("launch_s", "launch_fused_s", "compile_s")})
    return {**out, "side_by_side": side_by_side}


def _plan_run(name: str, profile: str, calibration: dict, counted: dict, how: tuple) -> dict:
    """One run of ``plan``: its jobs' steps, each job's step counted once per shape; ``how``:
    (at the paper's steps, mode)."""
    at_paper, mode = how
    config = plan_config(name, profile)
    jobs = config.jobs("cuda")
    r = dict(name=name, jobs=len(jobs), steps=0, members=0, kernels=0.0, gflop=0.0)
    r.update(launch_s=0.0, launch_fused_s=0.0, arithmetic_s=0.0, compile_s=0.0, device_s=0.0)
    r["device_fused_s"] = 0.0
    r["floor_s"], r["per_parameter_s"] = _floor(name, config, calibration, counted, how)
    for job in jobs:
        run = job_run(config, job)
        if run is None:  # trains nothing through the engine
            continue
        counts, steps = _counts(run, mode, counted), job_steps(config, job, name, at_paper)
        t = step_seconds(counts, calibration)
        r["steps"] += steps
        r["members"] = max(r["members"], len(run["tasks"]))
        r["kernels"] = max(r["kernels"], counts["kernels"])
        r["gflop"] = max(r["gflop"], counts["flops"] / 1e9)
        for part in ("launch", "arithmetic"):
            r[f"{part}_s"] += steps * t[part]
        r["compile_s"] += counts["compile_s"]  # every job compiles its own shapes once
        r["device_s"] += steps * t["step"] + counts["compile_s"]
        fused = step_seconds({**counts, "kernels": counts["kernels_fused"]}, calibration)
        r["device_fused_s"] += steps * fused["step"] + counts["compile_s"]
        r["launch_fused_s"] += steps * fused["launch"]
    r["gated_only"] = set(getattr(config, "families", ("gated",))) <= {"gated"}
    return r


def with_side_by_side(r: dict, measured: dict | None, K: int) -> dict:
    """Run ``r`` of ``_plan_run`` with up to ``K`` of its jobs at once: its device time over
    the speedup ``measured`` on the recorded GPU (``bench_overlap``: of the fused path, or of a
    family's forward where the run trains other families) at the most jobs measured that are
    no more than K and its jobs, and never under its arithmetic alone (its compiling is not
    divided); unchanged where nothing was measured or one job runs at a time. Adds "speedup"."""
    path = "gated" if r["gated_only"] else "lstm"
    table = {int(k): v for k, v in ((measured or {}).get(path) or {}).items()}
    fits = [k for k in table if k <= min(K, r["jobs"])]
    factor = table[max(fits)] if fits else 1.0
    stepping = r["device_s"] - r["compile_s"]
    if factor > 1:
        stepping = max(stepping / factor, r["arithmetic_s"])
    device_s = stepping + r["compile_s"]
    return {**r, "speedup": r["device_s"] / device_s, "device_s": device_s}


def _floor(name: str, config: Any, calibration: dict, counted: dict, how: tuple) -> tuple:
    """(floor, per parameter): device seconds of run ``name``'s products with every member at
    its own size (``own_sizes``) at the GPU's matmul peak, what its steps cost at the least;
    and of ``PER_PARAMETER`` FLOPs a parameter and token of every member (``per_parameter``)."""
    at_paper, mode = how
    own = own_size_config(config)
    total = per = 0.0
    for job in own.jobs("cuda"):
        run = job_run(own, job)
        if run is None:
            continue
        steps = job_steps(own, job, name, at_paper)
        for part in own_size_runs(run):
            total += steps * _flops(part, mode, counted)
            per += steps * per_parameter(part)
    return total / calibration["peak_flops"], per / calibration["peak_flops"]


def _flops(run: dict, mode: str | None, counted: dict) -> float:
    """``run``'s FLOPs a step in ``mode``, once per ``run_key`` (``counted``, filled in)."""
    key = ("flops", run_key(run), mode)
    if key not in counted:
        counted[key] = flops_per_step(run, mode=mode)
    return counted[key]


def _counts(run: dict, mode: str | None, counted: dict) -> dict:
    """``run``'s step counts in ``mode``: its kernels once per ``kernel_key``, its FLOPs once
    per ``run_key`` (``counted`` holds both, filled in)."""
    kernels = ("kernels", kernel_key(run), mode)
    if kernels not in counted:
        counted[kernels] = step_kernels(run, mode=mode)
    return {**counted[kernels], "flops": _flops(run, mode, counted)}


def parts(p: dict, limit_s: float = PART_S) -> list[list[tuple[str, float]]]:
    """The plan's runs, in order, cut into parts of at most ``limit_s`` device seconds: each part
    a list of (run, seconds of it in this part); a run longer than what is left of a part goes
    on in the next (a campaign call resumes it from its checkpoints)."""
    out: list[list[tuple[str, float]]] = [[]]
    left = limit_s
    for r in p["runs"]:
        todo = r["device_s"]
        while todo > 1e-9:
            if left <= 1e-9:
                out.append([])
                left = limit_s
            take = min(todo, left)
            out[-1].append((r["name"], take))
            todo, left = todo - take, left - take
    return out


def format_parts(p: dict, limit_s: float = PART_S, shown: int = 4) -> str:
    """``parts`` as lines: how many, and the first ``shown``, each with its runs' minutes."""
    cut = parts(p, limit_s)
    reach = "within" if p["floor_s"] <= limit_s else "over"
    lines = [
        f"one part of {limit_s / 60:.0f} min for all: the floor ({p['floor_s'] / 60:.1f} min) "
        f"is {reach} it at float32{_per_parameter_note(p, limit_s)}",
        f"{len(cut)} parts of at most {limit_s / 60:.0f} min of device time, the first:",
    ]
    for k, part in enumerate(cut[:shown], 1):
        runs = ", ".join(f"{name} {s / 60:.1f}" for name, s in part)
        lines.append(f"  part {k} ({sum(s for _, s in part) / 60:.1f} min): {runs}")
    return "\n".join(lines)


def _per_parameter_note(p: dict, limit_s: float) -> str:
    """The estimate of any implementation's products against ``limit_s``, where the plan made it."""
    per = p.get("per_parameter_s")
    reach = "" if per is None else "within" if per <= limit_s else "over"
    mins = "" if per is None else f"{per / 60:.1f} min"
    return reach and f";\nat 6 FLOPs a parameter and token (any implementation), {mins}: {reach} it"


def run_plan(profile: str = "paper", names: list[str] | None = None, progress: bool = True):
    """Train and record every run of the plan, one after another (``dev.record``); a run
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
        prog="python -m lab.gpu_plan", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--profile", default="paper", help="smoke, quick or paper")
    parser.add_argument("--only", nargs="*", help="these experiments (default: the missing runs)")
    parser.add_argument("--run", action="store_true", help="train and record them here")
    parser.add_argument(
        "--central",
        action="store_true",
        help="only the central claims' runs at the paper's steps (the paper profile, whatever"
        " --profile), in parts a campaign call fits (without --only, the plan shows them after"
        " the missing runs)",
    )
    parser.add_argument(
        "--side-by-side",
        type=int,
        default=None,
        metavar="K",
        help="up to K jobs of a run at once, at the speedup the recorded bench measured"
        f" (default: ${SIDE_BY_SIDE_ENV}, else 1)",
    )
    parser.add_argument(
        "--mode",
        choices=("fast", "compiled"),
        help="predict every step in this training mode (default: each run's own)",
    )
    parser.add_argument(
        "--counts",
        default=str(DEFAULT_PATH),
        help="keep the step counts in this file between calls ('': keep none; default: "
        "%(default)s, kept while the code, torch and this machine stay the same)",
    )
    parser.add_argument("--recount", action="store_true", help="count every step afresh")
    args = parser.parse_args(argv)
    names, mode = args.only or None, args.mode
    K = args.side_by_side or side_by_side()
    try:
        with kept_counts(args.counts or None, fresh=args.recount) as counted:
            if not args.central:
                p = plan(args.profile, names=names, counted=counted, mode=mode, side_by_side=K)
                print(format_plan(p))
            if args.central or not names:
                central = list(CENTRAL_CLAIMS)  # the paper profile: the paper's steps
                p = plan("paper", names=central, at_paper_steps=True, counted=counted,
                         mode=mode, side_by_side=K)  # fmt: skip
                print(f"\nthe central claims at the paper's steps\n{format_plan(p)}\n"
                      f"{format_parts(p)}")  # fmt: skip
    except ValueError as err:  # no recorded GPU bench: nothing to predict from, still runnable
        print(f"no prediction: {err}")
    if args.run:
        for folder in run_plan(args.profile, names):
            print(f"recorded: {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
