"""The package's command line: list the experiments and presets, run one with overrides.

    python -m gated_attention list
    python -m gated_attention run EXPERIMENT [--profile quick] [--steps N] [--seeds S ...]
                                             [--set FIELD=VALUE ...] [--retrain]
    python -m gated_attention readings

``run`` builds the experiment's config in the profile (the chapter's own), applies the
overrides, and then either loads a recorded run whose config is exactly that one (shipped with
the package: nothing is retrained unless ``--retrain``) or runs it through the results cache
(``experiments.run``: a finished entry is reused, an interrupted one resumes). ``--steps`` sets
the training steps (``train.steps`` or ``steps``), ``--seeds`` the seeds, ``--set`` any field,
dotted for a nested one (``--set train.lr=3e-3 --set T=16``); values are Python literals, else
strings. An unknown field is an error naming the fields there are.

``readings`` computes the chapters' long analyses of recorded runs (``experiments.derived``:
today the App. D.3 readings, ``report.recall_tables.RECORDED_READINGS``) and ships them beside
the runs, so that a fresh clone reads them instead of recomputing: a maintainer's step after a
change to the code they depend on (until then they are recomputed, once, into the cache).

Glossary (code name -> meaning):
    override         a config with one (dotted) field replaced, the new value checked by the
                     config's own __post_init__
    recorded_match   the recorded run whose config equals a config, if any (experiments)
    main             the command line
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import sys
from typing import Any

from ..experiments.cache import RECORDED_ROOT, run
from ..experiments.presets import PRESETS
from ..experiments.recorded_runs import recorded, recorded_match, recorded_names
from ..experiments.registry import EXPERIMENTS, experiment_config

__all__ = ["override", "parse_value", "recorded_match", "main"]


def parse_value(text: str) -> Any:
    """A Python literal (1e-3, 16, (0, 1), True, None) or, failing that, the string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def override(config: Any, field: str, value: Any) -> Any:
    """``config`` with the (dotted) ``field`` set to ``value``: a new frozen config, checked by
    its own __post_init__; an unknown field is a ValueError naming the known ones."""
    head, _, rest = field.partition(".")
    if not dataclasses.is_dataclass(config):
        raise ValueError(f"cannot set {field!r}: {type(config).__name__} has no fields")
    names = [f.name for f in dataclasses.fields(config)]
    if head not in names:
        raise ValueError(
            f"{type(config).__name__} has no field {head!r}; its fields: {', '.join(names)}"
        )
    if rest:
        value = override(getattr(config, head), rest, value)
    elif isinstance(getattr(config, head), tuple) and isinstance(value, list | int):
        value = tuple(value) if isinstance(value, list) else (value,)
    return dataclasses.replace(config, **{head: value})


def _steps_field(config: Any) -> str:
    if hasattr(config, "train") and dataclasses.is_dataclass(config.train):
        return "train.steps"
    if hasattr(config, "steps"):
        return "steps"
    raise ValueError(f"{type(config).__name__} has no steps to set; use --set")


def _list() -> None:
    recorded_by = {}
    for name in recorded_names():
        meta = json.loads((RECORDED_ROOT / name / "meta.json").read_text())
        recorded_by.setdefault(meta.get("name"), []).append(name)
    print("experiments (python -m gated_attention run NAME --profile smoke|quick|paper):")
    for name in EXPERIMENTS:
        shipped = recorded_by.get(name, [])
        print(f"  {name}" + (f"   recorded: {', '.join(shipped)}" if shipped else ""))
    print("presets (gated_attention.workbench.fit(..., preset=NAME)):")
    for p in PRESETS.values():
        t = p.train
        print(
            f"  {p.name:<9} lr {t.lr:g}, weight decay {t.weight_decay:g}, {t.steps:,} steps, "
            f"T = {p.T}, n = m = {p.n}: {p.shows}"
        )


def _summary(result) -> str:
    lines = [f"entry {result.path}"]
    for key, value in result.metrics.items():
        text = json.dumps(value)
        lines.append(f"  {key}: {text if len(text) <= 90 else text[:87] + '...'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gated_attention", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the experiments (and their recorded runs) and the presets")
    p = sub.add_parser("run", help="run an experiment (or load its recorded run)")
    p.add_argument("experiment", help="an experiment name (python -m gated_attention list)")
    p.add_argument("--profile", default="quick", help="smoke, quick or paper (default quick)")
    p.add_argument("--steps", type=int, help="training steps")
    p.add_argument("--seeds", type=int, nargs="+", help="the seeds")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="any field")
    p.add_argument("--retrain", action="store_true", help="train even if a recorded run matches")
    sub.add_parser("readings", help="compute and ship the chapters' readings of recorded runs")
    args = parser.parse_args(argv)
    if args.command == "list":
        _list()
        return 0
    if args.command == "readings":
        from ..report.recall_tables import ship_readings

        for path in ship_readings():
            print(f"shipped {path.relative_to(RECORDED_ROOT.parent)}")
        return 0
    try:
        config = experiment_config(args.experiment, args.profile)
        sets = [("seeds", args.seeds)] if args.seeds else []
        if args.steps is not None:
            sets.append((_steps_field(config), args.steps))
        for item in args.set:
            field, eq, text = item.partition("=")
            if not eq:
                raise ValueError(f"--set takes FIELD=VALUE, got {item!r}")
            sets.append((field.strip(), parse_value(text.strip())))
        for field, value in sets:
            config = override(config, field, value)
    except (ValueError, TypeError) as err:
        parser.error(str(err))
    name = None if args.retrain else recorded_match(config)
    if name is not None:
        print(f"loaded the recorded run {name} (its config is this one; --retrain to train)")
        result = recorded(name)
    else:
        result = run(config, progress=True)
    print(_summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
