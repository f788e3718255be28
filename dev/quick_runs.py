"""The quick profile's runs that ship recorded, so that ``make book`` reads them instead of
training them (``experiments.run_or_recorded``), and their re-recording after a change to the
training code.

    python -m dev.quick_runs             each run: recorded? training code
                                                           unchanged since?
    python -m dev.quick_runs --rerecord  re-record each run whose training
                                                           code changed; print how far it moved

A change that should not move any number (a refactor of the engine) shows as a difference of
exactly 0 after ``--rerecord``, which trains through the results cache (the rate searches
first: the Fig. 4 runs take their rates from them) and records from the working tree, so commit
first (book/reference.md, "Profiles").

Glossary (code name -> meaning):
    QUICK_RECORDED   the experiments whose quick run ships recorded, in the order they train
    label            the recorded name of one: ``<experiment>-quick``
"""

from __future__ import annotations

import argparse

import torch

from dev.record import record
from gated_attention import experiments
from gated_attention.experiments.cache import code_hash
from gated_attention.experiments.registry import CENTRAL_CLAIMS, experiment_config

__all__ = ["QUICK_RECORDED", "label", "status", "tensor_difference", "rerecord", "main"]

#: the experiments whose quick run ships recorded, in the order they train (rate searches
#: first): Sec. 4.1's students, then the runs of the central claims
QUICK_RECORDED = ("teacher-identification", *CENTRAL_CLAIMS)


def label(experiment: str) -> str:
    """The recorded name of an experiment's quick run."""
    return f"{experiment}-quick"


def _config(experiment: str):
    """The chapter's quick config (Fig. 4's main runs with the rates of their recorded
    searches, as the chapters build them)."""
    if experiment in ("architectures-teacher", "architectures-regression"):
        task = experiment.removeprefix("architectures-")
        return experiments.architectures_main_config(
            "quick", task, resolve=experiments.run_or_recorded
        )
    return experiment_config(experiment, "quick")


def status() -> list[tuple[str, str | None, bool]]:
    """(experiment, the recorded run of its quick config or None, whether the code that trains
    it is the code that trained the recording)."""
    rows = []
    for exp in QUICK_RECORDED:
        config = _config(exp)
        name = experiments.recorded_match(config)
        same = name is not None and (
            experiments.recorded(name).meta.get("code_hash") == code_hash(config=config)
        )
        rows.append((exp, name, same))
    return rows


#: entries' tensors that time the machine (seconds per step), not results of the training
TIMINGS = ("step_time", "train_wall_time_s")


def tensor_difference(old: dict, new: dict) -> float:
    """The largest absolute difference between two entries' tensors (nested dicts of tensors
    and numbers), the machine's timings (``TIMINGS``) left out; 0.0: the same numbers; inf:
    different keys or shapes."""
    if isinstance(old, dict) or isinstance(new, dict):
        if not (isinstance(old, dict) and isinstance(new, dict)) or old.keys() != new.keys():
            return float("inf")
        keys = [k for k in old if k not in TIMINGS]
        return max((tensor_difference(old[k], new[k]) for k in keys), default=0.0)
    if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor):
        if old.shape != new.shape:
            return float("inf")
        if old.numel() == 0:
            return 0.0
        both_nan = torch.isnan(old) & torch.isnan(new)
        diff = (old.double() - new.double()).abs().masked_fill(both_nan, 0.0)
        return float(diff.nan_to_num(nan=float("inf")).max())
    return 0.0 if old == new else float("inf")


def rerecord(names: tuple[str, ...] = QUICK_RECORDED, progress: bool = True) -> dict[str, float]:
    """Re-record each of ``names`` whose training code changed (``status``): train it, record
    it in place of the old recording (``record(..., replace=True)``: the old one stays until
    the new one is written) and return {experiment: difference from the old tensors}."""
    changed = {exp for exp, name, same in status() if not same}
    out = {}
    for exp in [n for n in QUICK_RECORDED if n in names and n in changed]:
        have = label(exp) in experiments.recorded_names()
        old = experiments.recorded(label(exp)).tensors if have else None
        command = f"python -m dev.quick_runs --rerecord ({exp})"
        result, _ = record(
            exp, "quick", name=label(exp), progress=progress, replace=True, command=command
        )
        out[exp] = float("nan") if old is None else tensor_difference(old, result.tensors)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dev.quick_runs", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rerecord", action="store_true", help="re-record the changed ones")
    args = parser.parse_args(argv)
    for exp, name, same in status():
        said = (
            "not recorded"
            if name is None
            else f"{name}: training code " + ("unchanged" if same else "CHANGED since")
        )
        print(f"{exp:<30} {said}")
    if args.rerecord:
        for exp, diff in rerecord().items():
            print(f"re-recorded {label(exp)}: largest difference from the old tensors {diff:.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
