"""The Performance chapter's readings: the benches and GPU step times that the lab wrote
(``lab/``, not installed), and what each recorded run cost, as rows for ``report.table``."""

from __future__ import annotations

import json
from pathlib import Path

from ..experiments import recorded, recorded_names
from ..experiments.recorded_runs import RECORDED_ROOT

#: bench key -> (the row's label, its format)
MEASURES: dict[str, tuple[str, str]] = {
    "reference_steps_per_s": ("reference, steps/s", ".1f"),
    "engine_steps_per_s": ("engine, steps/s", ".1f"),
    "engine_speedup": ("engine over reference", ".1f"),
    "sequential_steps_per_s": ("16 sequential, member-steps/s", ".0f"),
    "batched_steps_per_s": ("ensemble of 16, member-steps/s", ".0f"),
    "ensemble_speedup": ("ensemble over sequential", ".1f"),
    "engine_gflops": ("engine, GFLOP/s", ".1f"),
    "gemm_peak_gflops": ("one large product, GFLOP/s", ".0f"),
    "paper_run_hours": ("the paper's run, hours", ".2f"),
}


def benches(build: Path) -> dict[str, dict]:
    """{"H200 (recorded)": ..., "this machine": ...}: the second only where ``build`` (the
    scorecard's build folder) holds a ``bench.json``."""
    out = {"H200 (recorded)": json.loads((RECORDED_ROOT / "bench-h200.json").read_text())}
    here = Path(build) / "bench.json"
    if here.is_file():
        out["this machine"] = json.loads(here.read_text())
    return out


def bench_rows(benches: dict[str, dict]) -> list[dict]:
    """One row per measure of ``MEASURES``: its label, then each bench's value, formatted."""
    rows = []
    for key, (label, fmt) in MEASURES.items():
        row = {"measure": label}
        for name, b in benches.items():
            row[name] = "-" if b.get(key) is None else format(b[key], fmt)
        rows.append(row)
    return rows


def step_times() -> dict:
    """The step times recorded on a GPU (``python -m lab.step_times``)."""
    return json.loads((RECORDED_ROOT / "step-times-h200.json").read_text())


def step_rows(times: dict) -> list[dict]:
    """One row per timed step: its label, mode, members and milliseconds a step."""
    return [
        {
            "step": e["label"],
            "mode": e.get("mode", "-"),
            "members": e.get("members", "-"),
            "ms a step": f"{1e3 * e['s_per_step']:.3f}",
        }
        for e in times["entries"]
        if e.get("s_per_step") is not None
    ]


def trained(tensors: dict) -> int:
    """The networks an entry trained, summed over its parts where it keeps a set per part (App.
    D.3). ValueError: no parameters."""
    if "params" in tensors:
        return len(next(iter(tensors["params"].values())))
    parts = [v for v in tensors.values() if isinstance(v, dict) and "params" in v]
    if not parts:
        raise ValueError(f"no trained parameters in this entry (keys: {', '.join(tensors)})")
    return sum(trained(part) for part in parts)


def cost_rows() -> list[dict]:
    """A row per recorded run that trained networks of its own; hours with * were resumed from a
    checkpoint (the time of the steps after it)."""
    rows = []
    for name in recorded_names():
        run = recorded(name)
        if not hasattr(run.config, "train"):
            continue
        hw, resumed = run.meta["hardware"], run.metrics.get("resumed_from_step", 0)
        hours = f"{run.meta['wall_time_s'] / 3600:.2f}" + ("*" if resumed else "")
        rows.append(
            {
                "recorded run": name,
                "where": hw.get("device_name") or hw["cpu"],
                "members": trained(run.tensors),
                "steps": f"{run.config.train.steps:,}",
                "hours": hours,
            }
        )
    return rows


def thread_rows(build: Path) -> list[dict]:
    """The rows ``python -m lab.threads`` wrote into ``build``/threads.json, or []."""
    path = Path(build) / "threads.json"
    if not path.is_file():
        return []
    return json.loads(path.read_text())["rows"]
