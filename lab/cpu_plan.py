"""The CPU budget's runs not yet recorded, and one command that trains them, a few at a time.

    python -m lab.cpu_plan                  each run of ``experiments.cpu_budget``
                                                              not recorded: its name, its minutes
                                                              on one core, predicted from the
                                                              step times measured there
    python -m lab.cpu_plan --run [--workers 2] [--only NAME ...]
                                                              train and record them, ``workers``
                                                              at a time (one core each)

A run is recorded as ``<experiment>-<budget>`` (``cpu_budget.BUDGETS``: "cpu", and the lower
rungs of Fig. 2's ladder). Each trains in its own process through ``dev.record`` (the results
cache: it checkpoints and resumes, so the command given again after an interruption continues
where it stopped, and a finished entry is recorded without training). A learning-rate search of
Fig. 4A/4B is recorded after its main run, in the same worker: the main run computed it.
A worker that dies is reported with its exit status and its log; the others go on.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gated_attention.experiments.cpu_budget import CPU_RUNS, LADDER
from gated_attention.experiments.recorded_runs import recorded_names
from gated_attention.experiments.robustness import FINE, VARIANTS

__all__ = ["all_runs", "missing", "chains", "format_plan", "run_plan", "main"]

#: the repository root, where ``python -m dev.record`` runs
REPOSITORY = Path(__file__).resolve().parents[1]


#: recorded name -> predicted minutes on one core: steps x the one-thread step time measured when
#: the budgets were set (Fig. 4A/4B: with the search, which then costs nothing)
PREDICTED_MIN = {
    "how-many-neurons-A-cpu": 85,
    "how-many-neurons-B-cpu": 100,
    "architectures-teacher-cpu": 110,
    "architectures-regression-cpu": 110,
    "architectures-teacher-lr-cpu": 0,
    "architectures-regression-lr-cpu": 0,
    "associative-recall-cpu": 110,
    "teacher-identification-cpu": 55,
    "teacher-identification-cpu-x2": 15,
    "teacher-identification-cpu-x4": 30,
    # Fig. 3A's variants: 25 members of the 40 (step time about in proportion)
    **{f"how-many-neurons-A-cpu-{v}": 55 for v in VARIANTS},
    # measured before they ran: 18 ms a step in mode fast for 20 members at n <= 22, about
    # half that compiled
    "how-many-neurons-A-cpu-lr-wd": 40,
    **{f"how-many-neurons-A-cpu-{v}-fine": 20 for v in FINE},
}


def all_runs() -> list[tuple[str, str]]:
    """(experiment, budget) of every run of the CPU budget, in the order they train."""
    runs = [(name, "cpu") for name in CPU_RUNS]
    runs += [("teacher-identification", f"cpu-x{k}") for k in LADDER[:-1]]
    runs += [("how-many-neurons-A", f"cpu-{v}") for v in VARIANTS]
    return runs + [("how-many-neurons-A", f"cpu-{v}-fine") for v in FINE]


def label(experiment: str, budget: str) -> str:
    """The recorded run's name: ``<experiment>-<budget>``."""
    return f"{experiment}-{budget}"


def missing(only: list[str] | None = None) -> list[tuple[str, str]]:
    """The runs of ``all_runs`` (or those named in ``only``) not recorded yet."""
    have = set(recorded_names())
    runs = [r for r in all_runs() if label(*r) not in have]
    if only:
        unknown = set(only) - {label(*r) for r in all_runs()}
        if unknown:
            known = ", ".join(label(*r) for r in all_runs())
            raise ValueError(f"not a run of the CPU budget: {sorted(unknown)}; they are: {known}")
        runs = [r for r in runs if label(*r) in only]
    return runs


def _is_search(experiment: str) -> bool:
    """A learning-rate search whose main run is also a run of the CPU budget."""
    return experiment.endswith("-lr") and experiment.removesuffix("-lr") in CPU_RUNS


def chains(runs: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The runs grouped so that each learning-rate search follows its main run (which
    computes it): one chain per worker slot."""
    out, mains = [], {}
    for exp, budget in runs:
        if not _is_search(exp):
            mains[exp] = [(exp, budget)]
            out.append(mains[exp])
    for exp, budget in runs:
        if _is_search(exp):
            main_run = mains.get(exp.removesuffix("-lr"))
            if main_run is None:  # its main run is recorded: the search trains on its own
                out.append([(exp, budget)])
            else:
                main_run.append((exp, budget))
    return out


def format_plan(runs: list[tuple[str, str]]) -> str:
    """One line per run: its name and its predicted minutes on one core (``PREDICTED_MIN``)."""
    if not runs:
        return "every run of the CPU budget is recorded"
    lines = [f"{'run':<40} {'minutes on one core (predicted)':>32}"]
    for r in runs:
        m = PREDICTED_MIN.get(label(*r))
        lines.append(f"{label(*r):<40} {'not measured' if m is None else f'~{m}':>32}")
    total = sum(PREDICTED_MIN.get(label(*r), 0) for r in runs)
    lines.append(f"{'total (of those predicted)':<40} {f'~{total}':>32}")
    return "\n".join(lines)


def _record(run: tuple[str, str], logs: Path, python: str) -> tuple[str, int, Path]:
    exp, budget = run
    name = label(exp, budget)
    log = logs / f"{name}.log"
    cmd = [python, "-m", "dev.record", exp, "--budget", budget, "--name", name]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    with open(log, "w") as f:
        rc = subprocess.run(
            cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=REPOSITORY
        ).returncode
    return name, rc, log


def run_plan(
    runs: list[tuple[str, str]],
    workers: int = 2,
    logs: Path = Path("cpu-plan-logs"),
    python: str = sys.executable,
) -> list[tuple[str, int, Path]]:
    """Train and record ``runs`` in ``workers`` processes at a time (``chains``: a search after
    its main run); returns (name, exit status, log) of each, in the order they finished. A
    chain stops at its first failure; the others go on."""
    logs.mkdir(parents=True, exist_ok=True)
    done: list[tuple[str, int, Path]] = []

    def chain(links: list[tuple[str, str]]) -> None:
        for run in links:
            done.append(_record(run, logs, python))
            if done[-1][1] != 0:
                return

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(chain, chains(runs)))
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.cpu_plan", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--only", nargs="*", help="these runs (default: every one missing)")
    parser.add_argument("--run", action="store_true", help="train and record them here")
    parser.add_argument("--workers", type=int, default=2, help="processes at a time (cores)")
    parser.add_argument("--logs", default="cpu-plan-logs", help="a log per run, in this folder")
    args = parser.parse_args(argv)
    runs = missing(args.only)
    print(format_plan(runs))
    if not args.run:
        return 0
    failed = 0
    for name, rc, log in run_plan(runs, args.workers, Path(args.logs)):
        print(f"{name}: {'recorded' if rc == 0 else f'FAILED (exit status {rc}; log {log})'}")
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
