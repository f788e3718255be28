"""Training at the book's sizes on 1 and 2 torch threads, on a quiet machine and with every other
core busy: the measurement behind the package's default of one training thread
(``engine.device.DEFAULT_THREADS``; ``GATED_ATTENTION_THREADS`` sets another count).

    python -m lab.threads [--steps 2000] [--sizes 24 48] [--out _build/threads.json]

Each measurement is the README's ``workbench.fit(student, task, steps=STEPS)`` for an n-neuron
student, in a fresh process
(``GATED_ATTENTION_THREADS`` and ``OMP_NUM_THREADS`` set to the count), timed around the call,
the fastest of ``--repeats``. "Busy" runs ``os.cpu_count() - 1`` spinning processes beside it,
as a shared laptop, Binder or Colab gives a reader. ``make bench`` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["FIT", "fit_seconds", "busy", "measure", "main"]

#: the timed call, run in a fresh process: prints its seconds
FIT = """
import time
from gated_attention import workbench
task = workbench.teacher_task(d=4, seed=3)
student = workbench.student(task, n={n}, seed=3)
t0 = time.perf_counter()
workbench.fit(student, task, steps={steps})
print(time.perf_counter() - t0)
"""


def fit_seconds(n: int, steps: int, threads: int) -> float:
    """Seconds of one ``fit`` of an n-neuron student for ``steps`` steps on ``threads`` threads,
    in a process of its own; a failed run is a RuntimeError with its last error line."""
    env = {**os.environ, "GATED_ATTENTION_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    code = FIT.format(n=n, steps=steps)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"fit n={n} on {threads} threads failed: {out.stderr.strip()[-300:]}")
    return float(out.stdout.strip().splitlines()[-1])


@contextmanager
def busy(k: int) -> Iterator[list]:
    """``k`` processes spinning on the CPU while the block runs (the other cores of a shared
    machine)."""
    spin = [sys.executable, "-c", "while True: pass"]
    procs = [subprocess.Popen(spin) for _ in range(k)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def measure(sizes=(24, 48), steps: int = 2000, repeats: int = 2, threads=(1, 2)) -> list[dict]:
    """One row per (size, machine state): the fastest of ``repeats`` fits at each thread count."""
    rows = []
    others = max((os.cpu_count() or 1) - 1, 0)
    for state, load in (("quiet", 0), ("other cores busy", others)):
        with busy(load):
            for n in sizes:
                row = {"n": n, "machine": state}
                for t in threads:
                    secs = min(fit_seconds(n, steps, t) for _ in range(repeats))
                    row[f"{t} thread{'s' * (t > 1)}, s"] = round(secs, 2)
                rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.threads", description=__doc__)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[24, 48])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default="_build/threads.json")
    args = parser.parse_args(argv)
    rows = measure(tuple(args.sizes), args.steps, args.repeats)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"steps": args.steps, "cpu_count": os.cpu_count(), "rows": rows}
    out.write_text(json.dumps(record, indent=1) + "\n")
    for row in rows:
        print("  ".join(f"{k} {v}" for k, v in row.items()))
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
