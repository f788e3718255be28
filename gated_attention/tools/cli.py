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
dotted for a nested one (``--set train.lr=3e-3 --set T=16``). A value is read as the field's
declared type (``coerce``): a bool from true/false, yes/no or 1/0 (any case), an int or float
as a number, a tuple as ``(0.5,1.0)`` or ``0.5,1.0``, ``none`` where the field may be None.
The new config is checked by its own __post_init__, and what that leaves to the first training
step (each seed's task, a member's initial network, the held-out batch: ``preflight``) is built
before any step. An unknown field is an error naming the fields there are.

Expected failures print one line to stderr and exit with status 2, without a traceback: a bad
value or field, a config that fails its checks, a run that diverged (``NonFiniteLossError``), an
unwritable results cache (``CacheWriteError``), Ctrl-C (the run resumes from its last
checkpoint when the command is run again) and ``readings`` outside a source checkout. Other
errors keep their traceback.

``readings`` computes the chapters' long analyses of recorded runs (``readings.derived``:
today the App. D.3 readings, ``readings.recall_scores.RECORDED_READINGS``) and ships them beside
the runs, so that a fresh clone reads them instead of recomputing: a maintainer's step after a
change to the code they depend on (until then they are recomputed, once, into the cache). It
writes into the package's ``recorded/`` folder, so it needs a source checkout of the repository.

Glossary (code name -> meaning):
    coerce           a --set value (text) or a Python value as a field's declared type
    override         a config with one (dotted) field replaced, the new value coerced and
                     checked by the config's own __post_init__
    preflight        what a config's first training step builds, built without training
    recorded_match   the recorded run whose config equals a config, if any (experiments)
    main             the command line
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import math
import sys
import types
import typing
from typing import Any

from ..engine.guards import NonFiniteLossError
from ..experiments.cache import RECORDED_ROOT, CacheWriteError, run, source_checkout
from ..experiments.presets import PRESETS
from ..experiments.recorded_runs import recorded, recorded_match, recorded_names
from ..experiments.registry import EXPERIMENTS, experiment_config

__all__ = ["coerce", "override", "parse_value", "preflight", "recorded_match", "main"]

TRUE_WORDS, FALSE_WORDS = ("true", "yes", "1"), ("false", "no", "0")  # a bool's, any case
INTERRUPTED = "interrupted; run the same command again to resume from the last checkpoint"


def parse_value(text: str) -> Any:
    """A Python literal (1e-3, 16, (0, 1), True, None) or, failing that, the string: the
    reading of a value whose field declares no type ``coerce`` knows."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _describe(tp: Any) -> str:
    """``tp`` in words, for an error message."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        arms = [_describe(a) for a in args if a is not type(None)]
        return " or ".join(arms) + (" or none" if type(None) in args else "")
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a tuple of {_describe(args[0])} values, e.g. (1,2) or 1,2"
        return f"a tuple of {len(args)} values ({', '.join(_describe(a) for a in args)})"
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return words.get(tp, getattr(tp, "__name__", str(tp)))


def _items(value: Any, field: str, tp: Any) -> list:
    """The items of a tuple value: a Python sequence, a literal, ``a,b`` or a single value."""
    if isinstance(value, tuple | list):
        return list(value)
    if not isinstance(value, str):
        return [value]
    text = value.strip()
    if text in ("", "()", "[]"):
        return []
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        nested = any(typing.get_origin(a) is tuple for a in typing.get_args(tp))
        if nested:
            raise ValueError(f"{field} must be {_describe(tp)}, got {value!r}") from None
        if text[0] + text[-1] in ("()", "[]"):
            text = text[1:-1]
        return [part.strip() for part in text.split(",") if part.strip()]
    return list(parsed) if isinstance(parsed, tuple | list) else [parsed]


def _scalar(value: Any, tp: type, field: str) -> Any:
    """``value`` (text or a Python value) as bool, int, float or str, or a ValueError."""
    bad = ValueError(f"{field} must be {_describe(tp)}, got {value!r}")
    text = value.strip() if isinstance(value, str) else None
    if tp is bool:
        if isinstance(value, bool):
            return value
        word = text.lower() if text is not None else str(value) if value in (0, 1) else None
        if word in TRUE_WORDS or word in FALSE_WORDS:
            return word in TRUE_WORDS
        accepted = "/".join(f"{t}/{f}" for t, f in zip(TRUE_WORDS, FALSE_WORDS, strict=True))
        raise ValueError(
            f"{field} must be true or false (accepted, any case: {accepted}), got {value!r}"
        )
    if tp is str:
        if text is None:
            raise bad
        literal = parse_value(text)
        return literal if isinstance(literal, str) else text
    if isinstance(value, bool):
        raise bad
    if text is not None:
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise bad from None
    if tp is int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, int):
            return value
        raise bad
    if isinstance(value, int | float):
        return float(value)
    raise bad


def coerce(value: Any, tp: Any, field: str = "value") -> Any:
    """``value`` (the text of ``--set``, or a Python value) as the declared type ``tp``.

    bool: true/false, yes/no, 1/0 (any case); int, float: a number (an int also from an
    integral float such as 1e4); str: the text; tuple[X, ...] and tuple[X, Y]: ``(a,b)``,
    ``a,b`` or one value, each item coerced; ``X | None``: ``none`` (any case) or an X; a
    dataclass: only an instance (set its fields instead). A type not listed takes the text as
    a Python literal, else the string. A value that does not fit is a ValueError naming
    ``field`` and what it accepts."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and (
            value is None or (isinstance(value, str) and value.strip().lower() == "none")
        ):
            return None
        for arm in (a for a in args if a is not type(None)):
            try:
                return coerce(value, arm, field)
            except ValueError:
                pass
        raise ValueError(f"{field} must be {_describe(tp)}, got {value!r}")
    if origin is tuple:
        items = _items(value, field, tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(coerce(v, args[0], f"each item of {field}") for v in items)
        if len(items) != len(args):
            raise ValueError(f"{field} must be {_describe(tp)}, got {value!r}")
        return tuple(
            coerce(v, a, f"{field}[{k}]") for k, (v, a) in enumerate(zip(items, args, strict=True))
        )
    if tp in (bool, int, float, str):
        return _scalar(value, tp, field)
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        names = ", ".join(f.name for f in dataclasses.fields(tp))
        raise ValueError(f"{field} is a {tp.__name__}: set its fields ({field}.NAME=...): {names}")
    return parse_value(value) if isinstance(value, str) else value


def _field_types(config: Any) -> dict[str, Any]:
    """The declared types of a dataclass's fields (Any where they cannot be resolved)."""
    try:
        return typing.get_type_hints(type(config))
    except (NameError, TypeError):
        return {}


def override(config: Any, field: str, value: Any, *, _path: str = "") -> Any:
    """``config`` with the (dotted) ``field`` set to ``value`` (text or a Python value, coerced
    to the field's declared type): a new frozen config, checked by its own __post_init__; an
    unknown field or a value that does not fit is a ValueError naming the field."""
    head, _, rest = field.partition(".")
    where = _path + head
    if not dataclasses.is_dataclass(config):
        raise ValueError(f"cannot set {_path + field!r}: {type(config).__name__} has no fields")
    names = [f.name for f in dataclasses.fields(config)]
    if head not in names:
        raise ValueError(
            f"{type(config).__name__} has no field {head!r}; its fields: {', '.join(names)}"
        )
    if rest:
        value = override(getattr(config, head), rest, value, _path=where + ".")
    else:
        value = coerce(value, _field_types(config).get(head, Any), where)
    return dataclasses.replace(config, **{head: value})


def _arity(method: Any) -> int | None:
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return None
    return sum(p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD for p in params)


def preflight(config: Any) -> None:
    """Build what ``config``'s __post_init__ leaves to its first training step, without
    training: ``eval_batch`` (a positive integer), the task of its first seed (``task(seed)``:
    e.g. a teacher rank above d) and the initial network of its first member (``student``:
    e.g. a lam_range outside [0, 1]): a ValueError (or TypeError) now rather than later."""
    eval_batch = getattr(config, "eval_batch", 1)
    if isinstance(eval_batch, int) and not isinstance(eval_batch, bool) and eval_batch < 1:
        raise ValueError(f"eval_batch must be a positive integer, got {eval_batch}")
    members, student = getattr(config, "members", None), getattr(config, "student", None)
    if not callable(members) or not callable(student):
        return
    gatings = getattr(config, "gatings", None)
    lead = (gatings[0],) if isinstance(gatings, tuple) and gatings else ()
    first = members(*lead)
    if not first:
        return
    member = (*lead, *first[0])
    task = getattr(config, "task", None)
    try:
        if callable(task) and _arity(task) == 1:
            task(first[0][0])
    except (ValueError, TypeError) as err:
        raise type(err)(f"cannot build the task of seed {first[0][0]}: {err}") from err
    try:
        if _arity(student) == len(member):
            student(*member)
    except (ValueError, TypeError) as err:
        raise type(err)(f"cannot build the initial network of member {member}: {err}") from err


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


def _fail(prog: str, message: object) -> typing.NoReturn:
    """One line on stderr and exit status 2: an expected failure, no traceback."""
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):  # an interrupted run's progress bar
        bar.close()
    line = " ".join(str(message).split())  # one line, whatever the message holds
    print(f"{prog}: error: {line}", file=sys.stderr)
    raise SystemExit(2)


def _readings(prog: str) -> None:
    if source_checkout() is None:
        _fail(
            prog,
            "readings writes the readings into the package's recorded runs "
            f"({RECORDED_ROOT}), so it needs a source checkout of the repository (clone it "
            "and run `python -m gated_attention readings` there); this package is installed",
        )
    from ..readings import recall_scores as rt

    for path, now in rt.ship_readings():
        where = path.relative_to(RECORDED_ROOT.parent)
        print(f"shipped {where}" if now else f"current {where} (already shipped)")


def _config(args: argparse.Namespace) -> Any:
    """The experiment's config in the profile with the overrides, checked (``preflight``)."""
    config = experiment_config(args.experiment, args.profile)
    sets: list[tuple[str, Any]] = [("seeds", args.seeds)] if args.seeds else []
    if args.steps is not None:
        sets.append((_steps_field(config), args.steps))
    for item in args.set:
        field, eq, text = item.partition("=")
        if not eq or not field.strip():
            raise ValueError(f"--set takes FIELD=VALUE, got {item!r}")
        sets.append((field.strip(), text.strip()))
    for field, value in sets:
        config = override(config, field, value)
    try:
        preflight(config)
    except (ValueError, TypeError) as err:
        given = " ".join(f"{field}={value}" for field, value in sets)
        raise type(err)(f"{err} (the settings given: {given or 'none'})") from err
    return config


def _run(args: argparse.Namespace, prog: str) -> None:
    try:
        config = _config(args)
    except (ValueError, TypeError) as err:
        _fail(prog, err)
    name = None if args.retrain else recorded_match(config)
    if name is not None:
        print(f"loaded the recorded run {name} (its config is this one; --retrain to train)")
        result = recorded(name)
    else:
        result = run(config, progress=True)
    print(_summary(result))


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
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="any field (dotted for a nested one), read as its declared type",
    )
    p.add_argument("--retrain", action="store_true", help="train even if a recorded run matches")
    sub.add_parser("readings", help="compute and ship the chapters' readings of recorded runs")
    args = parser.parse_args(argv)
    prog = f"{parser.prog} {args.command}"
    try:
        if args.command == "list":
            _list()
        elif args.command == "readings":
            _readings(prog)
        else:
            _run(args, prog)
    except NonFiniteLossError as err:
        _fail(prog, err)  # "training diverged: ..." naming the members, steps and checkpoint
    except CacheWriteError as err:
        _fail(prog, err)
    except KeyboardInterrupt:
        _fail(prog, INTERRUPTED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
