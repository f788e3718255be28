"""The package's command line (click): list the experiments and presets, run one with overrides.

    python -m gated_attention list
    python -m gated_attention run EXPERIMENT [--profile smoke|quick|paper] [--steps N]
                                             [--seeds 0,1,2] [--set FIELD=VALUE ...] [--retrain]

``run`` builds the experiment's config in the profile (the chapter's own) with the overrides
(``--steps``: ``train.steps`` or ``steps``; ``--set``: any field, dotted for a nested one, read
as its declared type by ``overrides.coerce``), checked by its __post_init__ and ``preflight``;
then it loads the recorded run with exactly that config (``recorded_match``; ``--retrain``:
train anyway) or runs it through the results cache (``experiments.run``: a finished entry is
reused, an interrupted one resumes), and prints the entry's members (``readings.members``).

Expected failures (a bad value or field, a config that fails its checks, a diverged run, an
unwritable results cache, Ctrl-C: the run resumes when the command is run again) print one line
to stderr and exit with status 2; other errors keep their traceback.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import typing
from typing import Any

import click
from tabulate import tabulate

from ..engine.guards import NonFiniteLossError
from ..experiments.cache import RECORDED_ROOT, CacheWriteError, run
from ..experiments.presets import PRESETS
from ..experiments.profiles import PROFILES
from ..experiments.recorded_runs import recorded, recorded_match, recorded_names
from ..experiments.registry import DESCRIPTIONS, EXPERIMENTS, experiment_config
from ..readings.members import member_rows
from .overrides import override

INTERRUPTED = "interrupted; run the same command again to resume from the last checkpoint"


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


def _summary(result) -> str:
    """The entry's folder, its members as a table (``readings.members``), then its other
    metrics one line each."""
    lines = [f"entry {result.path}"]
    rows = member_rows(result)
    if rows:
        lines.append(tabulate(rows, headers="keys", floatfmt=".3g"))
    for key, value in result.metrics.items():
        if rows and isinstance(value, list):
            continue  # in the table
        text = json.dumps(value)
        lines.append(f"{key}: {text if len(text) <= 90 else text[:87] + '...'}")
    return "\n".join(lines)


def _fail(prog: str, message: object) -> typing.NoReturn:
    """One line on stderr and exit status 2: an expected failure, no traceback."""
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):  # an interrupted run's progress bar
        bar.close()
    line = " ".join(str(message).split())  # one line, whatever the message holds
    print(f"{prog}: error: {line}", file=sys.stderr)
    raise SystemExit(2)


def _config(experiment: str, profile: str, steps, seeds, items) -> Any:
    """The experiment's config in the profile with the overrides, checked (``preflight``)."""
    config = experiment_config(experiment, profile)
    sets: list[tuple[str, Any]] = [("seeds", seeds)] if seeds else []
    if steps is not None:
        sets.append((_steps_field(config), steps))
    for item in items:
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


PROG = "python -m gated_attention"


@click.group(
    name=PROG,
    help="A runnable companion to arXiv:2309.01775: list the experiments, run one with overrides.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
def cli() -> None:
    pass


@cli.command("list", help="The experiments, one line each, their recorded runs, and the presets.")
def list_command() -> None:
    recorded_by = {}
    for name in recorded_names():
        meta = json.loads((RECORDED_ROOT / name / "meta.json").read_text())
        recorded_by.setdefault(meta.get("name"), []).append(name)
    print("experiments (python -m gated_attention run NAME --profile smoke|quick|paper):")
    for name in EXPERIMENTS:
        shipped = recorded_by.get(name, [])
        print(f"  {name:<32} {DESCRIPTIONS[name]}")
        if shipped:
            print(f"  {'':<32} recorded: {', '.join(shipped)}")
    print("presets (gated_attention.workbench.fit(..., preset=NAME)):")
    for p in PRESETS.values():
        t = p.train
        print(
            f"  {p.name:<9} lr {t.lr:g}, weight decay {t.weight_decay:g}, {t.steps:,} steps, "
            f"T = {p.T}, n = m = {p.n}: {p.shows}"
        )


@cli.command("run", help="Run EXPERIMENT in a profile (or load its recorded run), with overrides.")
@click.argument("experiment", type=click.Choice(list(EXPERIMENTS)), metavar="EXPERIMENT")
@click.option("--profile", type=click.Choice(PROFILES), default="quick", show_default=True)
@click.option("--steps", type=click.IntRange(min=1), help="Training steps.")
@click.option("--seeds", metavar="S,S,...", help="The seeds, e.g. 0,1,2.")
@click.option(
    "--set",
    "items",
    multiple=True,
    metavar="FIELD=VALUE",
    help="Any field (dotted for a nested one, e.g. train.lr=3e-3), read as its declared type.",
)
@click.option("--retrain", is_flag=True, help="Train even if a recorded run matches.")
def run_command(experiment, profile, steps, seeds, items, retrain) -> None:
    prog = f"{PROG} run"
    try:
        config = _config(experiment, profile, steps, seeds, items)
    except (ValueError, TypeError) as err:
        _fail(prog, err)
    try:
        name = None if retrain else recorded_match(config)
        if name is not None:
            print(f"loaded the recorded run {name} (its config is this one; --retrain to train)")
            result = recorded(name)
        else:
            result = run(config, progress=True)
    except (NonFiniteLossError, CacheWriteError) as err:
        _fail(prog, err)  # "training diverged: ..." naming the members, steps and checkpoint
    except KeyboardInterrupt:
        _fail(prog, INTERRUPTED)
    print(_summary(result))


def main(argv: list[str] | None = None) -> int:
    """The command line (``argv`` default: ``sys.argv[1:]``): 0 when done; an expected failure,
    a usage error among them, exits with status 2 and one line on stderr."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        cli.main(args=args, prog_name=PROG, standalone_mode=False)
    except click.exceptions.Exit as done:  # --help
        return done.exit_code
    except click.UsageError as err:
        where = err.ctx.command_path if err.ctx is not None else PROG
        _fail(where, err.format_message())
    except click.Abort:
        _fail(PROG, INTERRUPTED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
