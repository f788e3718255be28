"""The first call on a lent GPU, prepared: its checks and measurements, within a budget.

    python -m lab.gpu_checks --out OUT [--budget-s 420] [--device cuda]

In order, each in a process of its own, given at most its share (``Step.cap_s``) of what is
left of the budget, its output in ``OUT/<step>.log``:

    cuda-tests   ``tests/test_cuda.py``: the GPU path against the CPU's numbers; its strict
                 expected failure (jobs side by side on CUDA streams) passing says
                 ``experiments.side_by_side.STREAMS_CHECKED`` may be set
    step-times   ``step_times --missing h200 --busy``: the steps the recorded H200 file lacks,
                 each with its kernels profiled on the device (``busy_time``), into
                 ``OUT/step-times.json``
    bench        ``bench --device``: the GPU bench (the TF32 matmul peak included), into
                 ``OUT/bench-gpu.json``

``OUT/call.json`` says what each step did (its command, exit status, seconds, or that the budget
was spent before it), rewritten after each: a step that fails or is stopped does not stop the
next, and a stop of the whole call keeps what the steps before it wrote. What comes back from
such a call is at most 8 files (7 here). The training itself is the campaign's
(``python -m lab.campaign --budget-s 480 --pack-to OUT``), in calls of its own.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gated_attention.atomic import atomic_write_json

__all__ = ["Step", "steps", "run_steps", "main"]

#: a step given less than this is not started: it could not do anything of use
MIN_S = 20.0


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of the call: ``name`` (its log ``OUT/<name>.log``), ``argv`` (``{budget}``
    stands for the seconds it is given less 10, for its own budget: it stops before it is
    stopped), ``cap_s`` (the most it is given)."""

    name: str
    argv: tuple[str, ...]
    cap_s: float


def steps(out: Path, device: str = "cuda") -> list[Step]:
    """The call's steps, in order (module docstring)."""
    py = (sys.executable,)
    tests = ("-m", "pytest", "-c", "/dev/null", "--rootdir", ".", "-q", "-rxXs")
    tests += ("-p", "no:cacheprovider", "tests/test_cuda.py")
    times = ("-m", "lab.step_times", "--device", device, "--missing", "h200")
    times += ("--busy", "--budget-s", "{budget}", "--out", str(out / "step-times.json"))
    bench = ("-m", "lab.bench", "--device", device)
    bench += ("--out", str(out / "bench-gpu.json"))
    return [
        Step("cuda-tests", py + tests, 150.0),
        Step("step-times", py + times, 240.0),
        Step("bench", py + bench, 120.0),
    ]


def _run(argv: list[str], log, given: float) -> int | str:
    """``argv``'s exit status, or that it was stopped after ``given`` seconds (its whole process
    group: the step times' children too)."""
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        return proc.wait(timeout=given)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return f"stopped after {given:.0f} s"


def run_steps(todo: list[Step], out: Path, budget_s: float, min_s: float = MIN_S) -> list[dict]:
    """Run ``todo`` in order within ``budget_s`` seconds (module docstring), a step given less
    than ``min_s`` not started; each step's record {"step", "argv", "rc", "seconds"} or
    {"step", "skipped"}, also in ``out/call.json``."""
    out.mkdir(parents=True, exist_ok=True)
    end, done = time.monotonic() + budget_s, []
    for step in todo:
        given = min(step.cap_s, end - time.monotonic())
        if given < min_s:
            done.append({"step": step.name, "skipped": "the budget was spent before it"})
            atomic_write_json(out / "call.json", done, indent=1)
            continue
        argv = [a.replace("{budget}", f"{max(given - 10, 1):.0f}") for a in step.argv]
        t0 = time.monotonic()
        with open(out / f"{step.name}.log", "w") as log:
            status = _run(argv, log, given)
        done.append({"step": step.name, "argv": argv, "rc": status,
                     "seconds": round(time.monotonic() - t0, 1)})  # fmt: skip
        atomic_write_json(out / "call.json", done, indent=1)
        print(f"{step.name}: {status} ({done[-1]['seconds']} s)", flush=True)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.gpu_checks", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="where the results go")
    parser.add_argument("--budget-s", type=float, default=420.0, help="seconds, all steps")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    done = run_steps(steps(args.out, args.device), args.out, args.budget_s)
    return 0 if all(d.get("rc") == 0 for d in done) else 1


if __name__ == "__main__":
    raise SystemExit(main())
