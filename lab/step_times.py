"""Measured step times on a device: the check of ``gpu_plan``'s prediction.

    python -m lab.step_times --device cuda --out FILE [--budget-s 300]
        [--steps 600] [--only LABEL ...]       measure (each entry in a process of its own)
        [--busy]                             and each step's kernel time (``busy_time``)
    python -m lab.step_times --device cuda --missing h200 --out FILE
                                             only those the recorded h200 file lacks
    python -m lab.step_times --list      the entries, in measuring order
    python -m lab.step_times --show      the recorded ones, beside their
                                                           prediction (``make bench``)

``gpu_plan`` predicts a step's device time from kernels and FLOPs counted on a CPU
(``device_time``). This module times the same steps where they run: each entry (``entries``)
is one training run as the engine receives it (``device_time.job_run`` of a central claim's
job, or ``bench_run``), trained through ``engine.train`` on the device for ``warm`` steps and
for ``warm + steps`` steps, each call from its start (compiling, capturing the CUDA graph,
drawing the first chunk); the difference over ``steps`` is the seconds of one step, what the
loop costs at its pace. An entry runs in a child process (``_child``) under what is left of the
budget, so one that compiles for minutes is stopped and the others still run; every result is
written to ``--out`` as it comes (JSON, a list), so a stop keeps what was measured.

Order (``entries``): the one-student bench step (fast, then compiled: the calibration of
``device_time``), the paper runs of the central claims at their longest (Fig. 3A's ensemble,
Fig. 4A's families, Fig. 3B's jobs, Fig. 4B's families), then the 28-neuron ensemble at 1, 4,
16 and 64 members (mode compiled: is a step's cost flat in the members?).

Recorded (``recorded_step_times``): ``recorded/step-times-<gpu>.json`` holds what a GPU
measured ("entries"), where and how ("provenance"), and the prediction it is set against
("predicted", from ``predict``); ``measured_runs`` turns the entries into each central run's
device time at the paper's steps, ``format_measured`` sets it beside the prediction, and
``measured_parts`` cuts the central claims into campaign calls by the measured times.

Glossary (code name -> meaning):
    Entry    one measurement: a label, how to build its run, and its steps in the plan
    label    "<experiment>/<job key>" for a job of a run, "bench/<mode>/E<members>" else
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import torch

from gated_attention.atomic import atomic_write_json
from gated_attention.engine import train
from lab.bench_timing import seconds
from lab.busy_time import busy_per_step, format_busy
from lab.device_time import bench_run, job_run

__all__ = [
    "Entry",
    "entries",
    "seconds_per_step",
    "measure",
    "predict",
    "recorded_step_times",
    "not_measured",
    "measured_runs",
    "format_measured",
    "measured_parts",
    "format_parts",
    "format_members",
    "format_provenance",
    "main",
]

#: the widest line the tables print: the book's column holds about 77 monospace characters
WIDTH = 76

#: the central claims' runs in measuring order: the longest (the paper's 1,000,000 steps) first
ORDER = (
    "how-many-neurons-A",
    "architectures-teacher",
    "how-many-neurons-B",
    "architectures-regression",
)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One measurement: ``label``, ``build()`` -> the run (``job_run``'s dict), ``mode`` (None:
    the run's own)."""

    label: str
    build: Callable[[], dict]
    mode: str | None = None
    about: str = ""


def _job_entries(name: str) -> list[Entry]:
    from lab.gpu_plan import plan_config

    config = plan_config(name, "paper")
    out = []
    for job in config.jobs("cuda"):
        build = lambda c=config, j=job: job_run(c, j)  # noqa: E731
        out.append(Entry(f"{name}/{job.key}", build, about=job.label))
    return out


def entries() -> list[Entry]:
    """Every measurement, in order (module docstring)."""
    out = [
        Entry("bench/fast/E1-n100", lambda: bench_run(100), "fast"),
        Entry("bench/compiled/E1-n100", lambda: bench_run(100), "compiled"),
    ]
    for name in ORDER:
        out += _job_entries(name)
    for mode in ("fast", "compiled"):
        for E in (1, 4, 16, 64):
            build = lambda E=E: bench_run(28, members=E)  # noqa: E731
            out.append(Entry(f"bench/{mode}/E{E}-n28", build, mode))
    return out


def predict(out: str | os.PathLike) -> dict:
    """``gpu_plan``'s prediction of the central claims at the paper's steps, run by run
    ({name: {"device_s", "compile_s", "arithmetic_s", "floor_s", "jobs", "steps"}}), written
    to ``out`` as JSON: what the measured step times are set against."""
    from lab.gpu_plan import CENTRAL_CLAIMS, plan

    p = plan("paper", names=list(CENTRAL_CLAIMS), at_paper_steps=True)
    keys = ("device_s", "device_fused_s", "compile_s", "arithmetic_s", "floor_s", "jobs", "steps")
    runs = {r["name"]: {k: r[k] for k in keys} for r in p["runs"]}
    result = {"gpu": p["gpu"], "calibration": p["calibration"], "runs": runs}
    atomic_write_json(out, result, indent=1)
    return result


def _train(run: dict, steps: int, mode: str | None, device: str) -> float:
    """Wall seconds of ``run`` trained ``steps`` steps on ``device`` from its start, synced."""
    c = run["config"]
    chunk = min(c.chunk_steps, steps)
    tc = dataclasses.replace(
        c, steps=steps, log_every=steps, chunk_steps=chunk, checkpoint_every=0, warmup_steps=0,
        mode=mode or c.mode,
    )  # fmt: skip
    return seconds(
        lambda: train(
            run["tasks"], run["params"], tc, data_seeds=run["data_seeds"], masks=run["masks"],
            no_decay=run["no_decay"], forward=run["forward"], progress=False, device=device,
            member_lrs=run.get("member_lrs"),
        )
    )  # fmt: skip


def seconds_per_step(run: dict, device: str, steps: int, warm: int = 100, mode=None) -> dict:
    """{"first_s", "second_s", "s_per_step", "members", "mode"}: ``run`` trained ``warm`` and
    ``warm + steps`` steps on ``device`` (each from its start), the difference over ``steps``.
    The first call also compiles; "first_s" says how long that took."""
    if steps < 1 or warm < 1:
        raise ValueError(f"steps and warm must be >= 1, got {steps} and {warm}")
    first = _train(run, warm, mode, device)
    again = _train(run, warm, mode, device)  # compiled now: the start without compiling
    second = _train(run, warm + steps, mode, device)
    return {
        "first_s": first,
        "warm_s": again,
        "second_s": second,
        "s_per_step": (second - again) / steps,
        "members": len(run["tasks"]),
        "mode": mode or run["config"].mode,
    }


def _child(label: str, device: str, steps: int, out: Path, busy: bool = False) -> None:
    """Measure the entry ``label`` and write its result to ``out`` (one JSON object); with
    ``busy``, then its kernels (``busy_time``), written again: a failure there keeps the step."""
    entry = {e.label: e for e in entries()}[label]
    run = entry.build()
    result = {"label": label, "about": entry.about, "device": device, "steps": steps}
    result |= seconds_per_step(run, device, steps, mode=entry.mode) | {"torch": torch.__version__}
    atomic_write_json(out, result)
    if busy:
        train_steps = lambda k: _train(run, k, entry.mode, device)  # noqa: E731
        atomic_write_json(out, result | busy_per_step(train_steps, device, min(steps, 100)))


def measure(
    out: str | os.PathLike,
    device: str,
    budget_s: float,
    steps: int = 600,
    only: list[str] | None = None,
    busy: bool = False,
) -> list[dict]:
    """Measure ``entries`` (or those labelled ``only``) one by one, each in a child process
    given what is left of ``budget_s``; the list of results (an entry stopped or failed: its
    "error") is rewritten to ``out`` after each."""
    out = Path(out)
    labels = [e.label for e in entries()]
    unknown = sorted(set(only or ()) - set(labels))
    if unknown:
        raise ValueError(f"unknown entries {unknown}; --list shows them")
    end, results = time.monotonic() + budget_s, []
    for label in only or labels:
        left = end - time.monotonic()
        if left < 5:
            results.append({"label": label, "error": "not started: the budget was spent"})
            continue
        one = out.with_name(out.name + ".one")
        one.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", __spec__.name, "--child", label, "--device", device]
        cmd += ["--steps", str(steps), "--out", str(one)] + (["--busy"] if busy else [])
        t0 = time.monotonic()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
            err = None if done.returncode == 0 else "\n".join(done.stderr.splitlines()[-4:])
        except subprocess.TimeoutExpired:
            err = f"stopped at the budget after {time.monotonic() - t0:.0f} s"
        if err is None or one.exists():  # a step timed, its kernels not: the step kept
            r = json.loads(one.read_text()) | ({"busy_error": err} if err else {})
        else:
            r = {"label": label, "error": err}
        r["wall_s"] = time.monotonic() - t0
        results.append(r)
        atomic_write_json(out, results, indent=1)
        print(json.dumps(r), flush=True)
    return results


def recorded_step_times() -> dict[str, dict]:
    """The step times measured on GPUs and shipped with the package, by GPU name
    (``recorded/step-times-<gpu>.json``); a file without "entries" and "provenance", or an
    entry without a label and either "s_per_step" or "error", is an error naming it."""
    from gated_attention.experiments.recorded_runs import RECORDED_ROOT

    out = {}
    for path in sorted(RECORDED_ROOT.glob("step-times-*.json")):
        try:
            r = json.loads(path.read_text())
        except ValueError as err:
            raise ValueError(f"recorded step times {path} are not valid JSON ({err})") from None
        bad = [k for k in ("entries", "provenance") if k not in r]
        bad += [
            f"entry {i}"
            for i, e in enumerate(r.get("entries", []))
            if "label" not in e or ("s_per_step" not in e and "error" not in e)
        ]
        if bad:
            raise ValueError(f"recorded step times {path} lack {', '.join(bad)}")
        out[path.stem.removeprefix("step-times-")] = r
    return out


def not_measured(gpu: str = "h200") -> list[str]:
    """The labels of ``entries`` without a step time in the recorded ``gpu``'s file (every
    label where there is none), in measuring order: what the next call there should time."""
    times = recorded_step_times().get(gpu, {"entries": []})
    done = {e["label"] for e in times["entries"] if "s_per_step" in e}
    return [e.label for e in entries() if e.label not in done]


def measured_runs(times: dict, names: tuple[str, ...] | None = None) -> list[dict]:
    """Each central run (``ORDER``, or ``names``) at the paper's steps on the GPU of ``times``
    (one value of ``recorded_step_times``): {"name", "jobs", "measured", "steps",
    "stepping_s", "compile_s", "missing"}: its measured jobs' steps x their seconds a step,
    their compiling there (the first call's seconds over the second's), the labels of the
    jobs not measured."""
    from lab.gpu_plan import job_steps, plan_config

    by_label = {e["label"]: e for e in times["entries"] if "s_per_step" in e}
    out = []
    for name in names or ORDER:
        config = plan_config(name, "paper")
        r = dict(name=name, jobs=0, measured=0, steps=0, stepping_s=0.0, compile_s=0.0)
        r["missing"] = []
        for job in config.jobs("cuda"):
            r["jobs"] += 1
            e = by_label.get(f"{name}/{job.key}")
            if e is None:
                r["missing"].append(job.label)
                continue
            steps = job_steps(config, job, name, True)
            r["measured"] += 1
            r["steps"] += steps
            r["stepping_s"] += steps * e["s_per_step"]
            r["compile_s"] += e["first_s"] - e["warm_s"]
        out.append(r)
    return out


def format_measured(runs: list[dict], predicted: dict | None = None) -> str:
    """``measured_runs`` as a table, beside ``predicted`` (``predict``'s "runs") where given:
    minutes of stepping at the paper's steps (compiling left out: the prediction's is a CPU's),
    measured and predicted, their ratio, and the measured over the arithmetic (the jobs' FLOPs
    at the GPU's float32 matmul peak); then the compiling measured there."""
    head = f"{'run':<24} {'jobs':>4} {'steps':>10} {'measured':>9} {'pred.':>6} {'ratio':>5}"
    lines = [f"{head} {'/arith':>6}"]
    total, ratios, overs = {"m": 0.0, "p": 0.0}, [], []
    for r in runs:
        m = r["stepping_s"] / 60
        pred = (predicted or {}).get(r["name"], {})
        p, arith = pred.get("device_s"), pred.get("arithmetic_s")
        p = None if p is None else (p - pred.get("compile_s", 0.0)) / 60
        whole = r["measured"] == r["jobs"]
        if whole and p:
            total["m"], total["p"] = total["m"] + m, total["p"] + p
            ratios.append(m / p)
        if whole and arith:
            overs.append(r["stepping_s"] / arith)
        p_text = "-" if p is None else f"{p:.1f}"
        ratio = f"{m / p:.2f}" if whole and p else "-"
        over = f"{r['stepping_s'] / arith:.1f}x" if whole and arith else "-"
        jobs = f"{r['measured']}/{r['jobs']}"
        lines.append(
            f"{r['name']:<24} {jobs:>4} {r['steps']:>10,} {m:>5.1f} min {p_text:>6} "
            f"{ratio:>5} {over:>6}"
        )
    if total["p"]:
        lines.append(
            f"{'measured whole':<24} {'':>4} {'':>10} {total['m']:>5.1f} min "
            f"{total['p']:>6.1f} {total['m'] / total['p']:>5.2f}"
        )
    if ratios and overs:
        text = (
            f"the runs measured whole took {min(ratios):.2f}x to {max(ratios):.2f}x their "
            f"predicted stepping, {min(overs):.1f}x to {max(overs):.1f}x their arithmetic"
        )
        lines += textwrap.wrap(text, WIDTH)
    compiling = sum(r["compile_s"] for r in runs) / 60
    lines.append(f"compiling, measured there: {compiling:.1f} min for the jobs measured")
    for name in sorted(set(predicted or {}) - {r["name"] for r in runs}):
        p = predicted[name]
        text = f"{name}: not measured, predicted {(p['device_s'] - p['compile_s']) / 60:.1f} min"
        lines.append(text)
    for r in runs:
        if r["missing"]:
            text = f"{r['name']}: not measured: {'; '.join(r['missing'])}"
            lines += textwrap.wrap(text, WIDTH, subsequent_indent="  ")
    return "\n".join(lines)


def measured_parts(times: dict) -> dict:
    """The central claims (``gpu_plan.CENTRAL_CLAIMS``, in order) at the paper's steps, each
    run's device time as measured on the GPU of ``times`` for its timed jobs (stepping and
    compiling there) and, for the rest, its predicted time with the stepping scaled by "ratio",
    measured over predicted stepping of the runs measured whole: {"runs": [{"name",
    "device_s", "measured", "jobs"}], "ratio", "total_s", "floor_s"}, as ``gpu_plan.parts``
    cuts a plan into the parts of one campaign call each."""
    from lab.gpu_plan import CENTRAL_CLAIMS

    pred = times["predicted"]["runs"]
    done = {r["name"]: r for r in measured_runs(times)}
    whole = [r for r in done.values() if r["measured"] == r["jobs"]]
    predicted = sum(pred[r["name"]]["device_s"] - pred[r["name"]]["compile_s"] for r in whole)
    ratio = sum(r["stepping_s"] for r in whole) / predicted
    runs = []
    for name in CENTRAL_CLAIMS:
        p, m = pred[name], done.get(name)
        timed = 0 if m is None else m["measured"]
        rest = (p["jobs"] - timed) / p["jobs"]  # the share of its jobs not timed
        device_s = rest * ((p["device_s"] - p["compile_s"]) * ratio + p["compile_s"])
        if m is not None:
            device_s += m["stepping_s"] + m["compile_s"]
        runs.append(dict(name=name, device_s=device_s, measured=timed, jobs=p["jobs"]))
    total = sum(r["device_s"] for r in runs)
    floor = sum(pred[name]["floor_s"] for name in CENTRAL_CLAIMS)
    return {"runs": runs, "ratio": ratio, "total_s": total, "floor_s": floor}


def format_parts(mp: dict) -> str:
    """``measured_parts`` cut into campaign calls (``gpu_plan.format_parts``), under a line
    saying how much of it was measured."""
    from lab.gpu_plan import format_parts as cut

    timed = sum(r["measured"] for r in mp["runs"])
    jobs = sum(r["jobs"] for r in mp["runs"])
    head = (
        f"by the measured steps ({timed} of {jobs} jobs timed; the rest predicted, stepping x "
        f"{mp['ratio']:.2f}): {mp['total_s'] / 60:.0f} min of device time in all"
    )
    lines = textwrap.wrap(head, WIDTH)
    for line in cut(mp).splitlines():  # a part of many runs wraps under its first line
        lines += textwrap.wrap(line, WIDTH, subsequent_indent="    ", drop_whitespace=False)
    return "\n".join(lines)


def format_members(times: dict) -> str:
    """The one-student step and the 28-neuron ensemble against its members, as measured."""
    lines = [f"{'step':<28} {'ms a step':>9} {'member-steps/s':>14}"]
    for e in times["entries"]:
        if e["label"].startswith("bench/") and "s_per_step" in e:
            ms, E = e["s_per_step"] * 1e3, e["members"]
            lines.append(f"{e['label'][6:]:<28} {ms:>9.3f} {E / e['s_per_step']:>14,.0f}")
    return "\n".join(lines)


def format_provenance(prov: dict) -> str:
    """A record's provenance, one wrapped paragraph per field."""
    lines = []
    for key, value in prov.items():
        lines += textwrap.wrap(f"{key}: {value}", WIDTH, subsequent_indent="  ")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.step_times", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, default=Path("step-times.json"))
    parser.add_argument("--budget-s", type=float, default=300.0)
    parser.add_argument("--steps", type=int, default=600, help="timed steps an entry")
    parser.add_argument("--only", nargs="*", help="these labels (default: every entry)")
    parser.add_argument(
        "--missing", metavar="GPU", help="only the entries the recorded GPU's file lacks"
    )
    parser.add_argument("--busy", action="store_true", help="also each step's kernel time")
    parser.add_argument("--list", action="store_true", help="print the entries and stop")
    parser.add_argument("--predict", action="store_true", help="write gpu_plan's prediction")
    parser.add_argument("--show", action="store_true", help="print the recorded step times")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(e.label for e in entries()))
        return 0
    if args.show:
        for gpu, times in recorded_step_times().items():
            print(f"\nmeasured on the recorded {gpu}: the bench's steps")
            print(format_members(times))
            print(f"\nthe central claims at the paper's steps, measured on the {gpu}")
            print(format_measured(measured_runs(times), times["predicted"]["runs"]))
            print(format_parts(measured_parts(times)))
            print(format_busy(times["entries"]) or "no step's kernel time measured (--busy)")
        return 0
    if args.predict:
        predict(args.out)
        return 0
    if args.child:
        _child(args.child, args.device, args.steps, args.out, args.busy)
        return 0
    only = not_measured(args.missing) if args.missing else args.only
    results = measure(args.out, args.device, args.budget_s, args.steps, only, args.busy)
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
