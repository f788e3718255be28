"""The scorecard: every reproduced number beside the paper's (the book's Reference page).

``record(id, ours, profile=...)`` is ``score`` (against the entry of ``paper_values.json``:
paper value, source, tolerance, criterion; a chapter states none of its own) then ``store``
(atomically, to ``<build>/scorecard/<profile>/<id>.json``, rewriting ``<build>/scorecard.json``,
and kept in memory for the chapter's verdict: ``session_records``). ``<build>``: ``build_dir``.

Criteria (``criterion`` in paper_values.json; ``reference`` defaults to ``paper``):
    max     ours <= tolerance
    abs     |ours - reference| <= tolerance
    rel     |ours - reference| <= tolerance * |reference|
    range   tolerance[0] <= ours <= tolerance[1]
    exact   ours == reference (numbers or exact strings such as "5/74")
    report  shown, never scored: its status is "report" (the paper gives nothing comparable)

``paper`` holds only what the paper states (null where it states no number); a ``reference``
that differs is ours, shown labelled so (``paper_cell``). ``interval``: (low, high) of ``ours``
over seeds; where it straddles the threshold, the seeds cannot decide (``straddles``).
``budget``: what the row was trained with (``verdict.budget``; rows marked ``"budget": "exact"``
read ``EXACT_BUDGET``). A recorded run's row whose analysis rule changed after the run
(``rule_set_after_runs``) reads ``RULE_AFTER`` and does not decide its claim (a rule moved after
seeing a result is a criterion moved), unless the rule in force then (``before``) gives the same
status: its note is then ``SAME_BEFORE``, and it decides.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

from ..atomic import atomic_write_json
from . import table
from .rows import (
    EXACT_BUDGET,
    REF_OURS,
    RULE_AFTER,
    SAME_BEFORE,
    SET_AFTER,
    Record,
    fmt,
    ours_cell,
    paper_cell,
    paper_values,
    straddled,
    straddles,
)

__all__ = [
    "fmt",
    "Record",
    "paper_values",
    "record",
    "score",
    "store",
    "collect",
    "collect_recorded",
    "recorded_dir",
    "show",
    "to_markdown",
    "build_dir",
    "expected_ids",
    "missing_ids",
    "session_records",
    "EXACT_BUDGET",
    "SET_AFTER",
    "RULE_AFTER",
    "SAME_BEFORE",
    "REF_OURS",
    "paper_cell",
    "ours_cell",
    "straddles",
    "straddled",
]

_SESSION: list = []  # every Record written by this process, in call order


def expected_ids(chapters: list[str] | None = None) -> list[str]:
    """The ids the book must produce (only those of ``chapters``, stems, if given), in the order
    of paper_values.json."""
    values = paper_values()
    if chapters is None:
        return list(values)
    return [k for k, v in values.items() if set(v["chapters"]) & set(chapters)]


def missing_ids(profile: str, chapters: list[str]) -> list[str]:
    """The ids ``chapters`` must produce that no stored row of ``profile`` has; a
    ``recorded_only`` id (scored on a recorded run only) must be among the recorded rows, once
    the package holds the run it names (``recorded_run``), if it names one."""
    from ..experiments.recorded_runs import recorded_names

    built = {r.id for r in collect(profile)}
    recorded = {r.id for r in collect_recorded()}
    values = paper_values()
    shipped = set(recorded_names())

    def pending(i: str) -> bool:  # its recorded run is not in the package yet
        return values[i].get("recorded_run", None) not in (None, *shipped)

    return [
        i
        for i in expected_ids(chapters)
        if i not in (recorded if values[i].get("recorded_only") else built) and not pending(i)
    ]


def build_dir() -> Path:
    """``$GATED_ATTENTION_BUILD``, else ``_build`` in the repository root (found from the cwd),
    else ``_build`` in the working directory (never inside an installed package)."""
    env = os.environ.get("GATED_ATTENTION_BUILD")
    if env:
        return Path(env)
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").exists() and (folder / "gated_attention").is_dir():
            return folder / "_build"
    return here / "_build"


def criterion_status(entry: dict, ours) -> str:
    """The status of ``ours`` ("pass", "miss" or "report") against a paper_values.json entry."""
    kind, tol = entry["criterion"], entry.get("tolerance")
    ref = entry.get("reference", entry.get("paper"))
    if kind == "exact":
        if isinstance(ref, str) or isinstance(ours, str):
            return "pass" if str(ours).replace(" ", "") == str(ref).replace(" ", "") else "miss"
        return "pass" if ours == ref else "miss"
    if kind == "report":
        return "report"
    if isinstance(ours, str):
        raise TypeError(f"criterion {kind!r} needs a number, got the string {ours!r}")
    if not math.isfinite(ours):
        return "miss"
    if kind == "max":
        return "pass" if ours <= tol else "miss"
    if kind == "abs":
        return "pass" if abs(ours - ref) <= tol else "miss"
    if kind == "rel":
        return "pass" if abs(ours - ref) <= tol * abs(ref) else "miss"
    if kind == "range":
        return "pass" if tol[0] <= ours <= tol[1] else "miss"
    raise ValueError(f"unknown criterion {kind!r} in paper_values.json (id {entry['id']!r})")


def _plain(x):
    """Numbers from numpy/torch as plain Python numbers."""
    if isinstance(x, str | int | float) or x is None:
        return x
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"ours must be a number or a string, got {type(x).__name__}")


def record(
    id: str,
    ours,
    *,
    profile: str,
    seeds: int | None = None,
    note: str = "",
    write: bool = True,
    run: str = "",
    budget: str = "",
    interval: tuple | None = None,
    before=None,
) -> Record:
    """Score ``ours`` against the paper's value for ``id``; store the record if ``write``.

    Args:
        id: ``<artefact>.<quantity>``, an id of paper_values.json.
        ours: a number, or a string for an exact value ("5/74").
        run: the recorded run (``experiments.recorded``) the value comes from: stored apart
            (``collect_recorded``).
        budget: see ``verdict.budget``; rows marked exact in paper_values.json get EXACT_BUDGET.
        interval: (low, high) of ``ours`` over seeds (None at an open end).
        before: the value under the rule in force when ``run`` was made (rule_set_after_runs).
    """
    rec = score(
        id,
        ours,
        profile=profile,
        seeds=seeds,
        note=note,
        run=run,
        budget=budget,
        interval=interval,
        before=before,
    )
    if write:
        store(rec)
    return rec


def score(
    id: str,
    ours,
    *,
    profile: str,
    seeds: int | None = None,
    note: str = "",
    run: str = "",
    budget: str = "",
    interval: tuple | None = None,
    before=None,
) -> Record:
    """The record of ``ours`` for ``id`` (the arguments of ``record``), scored, not stored."""
    from ..experiments.profiles import check_profile

    check_profile(profile)
    values = paper_values()
    if id not in values:
        raise KeyError(f"unknown scorecard id {id!r}; known ids are listed in paper_values.json")
    entry = values[id]
    ours = _plain(ours)
    if isinstance(ours, bool):
        ours = int(ours)
    status = criterion_status(entry, ours)
    if not budget and entry.get("budget") == "exact":
        budget = EXACT_BUDGET
    if run and run in entry.get("set_after_runs", ()):
        note = f"{SET_AFTER}{'; ' + note if note else ''}"
    if run and run in entry.get("rule_set_after_runs", ()):
        said = RULE_AFTER
        if before is not None and criterion_status(entry, _plain(before)) == status:
            said = SAME_BEFORE.format(before=fmt(_plain(before)))
        note = f"{said}{'; ' + note if note else ''}"
    if interval is not None:
        if len(interval) != 2:
            raise ValueError(f"interval must be (low, high), got {interval!r}")
        interval = [None if v is None else _plain(v) for v in interval]
    if isinstance(ours, float) and not math.isfinite(ours):
        # JSON has no NaN: a value that could not be produced is stored as null (and a miss)
        note = f"no finite value ({ours}){'; ' + note if note else ''}"
        ours = None
    return Record(
        id=id,
        artefact=entry["artefact"],
        paper=entry["paper"],
        ours=ours,
        tolerance=entry.get("tolerance"),
        criterion=entry["criterion"],
        words=entry.get("words", ""),
        status=status,
        profile=profile,
        source=entry["source"],
        seeds=seeds,
        note=note,
        run=run,
        budget=budget,
        reference=entry.get("reference"),
        interval=interval,
    )


def store(rec: Record) -> None:
    """Write ``rec`` under the build folder (a recorded run's row apart, one file per run and
    row; a build row in its profile, and scorecard.json rewritten) and add it to this
    process's records (``session_records``)."""
    strict = {"indent": 2, "allow_nan": False}
    folder = recorded_dir() / rec.run if rec.run else build_dir() / "scorecard" / rec.profile
    atomic_write_json(folder / f"{rec.id}.json", dataclasses.asdict(rec), **strict)
    if not rec.run:
        rows = [dataclasses.asdict(r) for r in collect(rec.profile)]
        atomic_write_json(build_dir() / "scorecard.json", rows, **strict)
    _SESSION.append(rec)


def session_records() -> list[Record]:
    """The records this process wrote, the latest per (id, run), in call order."""
    return list({(r.id, r.run): r for r in _SESSION}.values())


def recorded_dir() -> Path:
    """Where the rows of recorded paper-budget runs are stored (one file per id)."""
    return build_dir() / "scorecard" / "recorded"


def collect_recorded() -> list[Record]:
    """The stored rows of recorded runs (``record(..., run=NAME)``), in the order of
    paper_values.json (rows of several runs: in the order of the runs' names)."""
    return _collect(recorded_dir(), "*/*.json")


def collect(profile: str) -> list[Record]:
    """All stored records of ``profile``, in the order of paper_values.json; a ValueError names
    a record file that cannot be read."""
    return _collect(build_dir() / "scorecard" / profile)


def _collect(folder: Path, pattern: str = "*.json") -> list[Record]:
    order = {k: i for i, k in enumerate(expected_ids())}
    records = []
    for path in sorted(folder.glob(pattern)):
        try:
            data = json.loads(path.read_text())
            if isinstance(data.get("ours"), float) and not math.isfinite(data["ours"]):
                data["ours"] = None  # written by an older version, which let NaN through
            records.append(Record(**data))
        except (json.JSONDecodeError, TypeError, AttributeError) as err:
            raise ValueError(
                f"corrupt scorecard record {path}: {err}; re-execute its chapter"
            ) from err
    return sorted(records, key=lambda r: order.get(r.id, len(order)))


def to_markdown(records: list[Record], *, source: bool = True) -> str:
    """A markdown table of records (``report.table``): id, artefact, paper (``paper_cell``),
    ours, criterion, status (and source)."""
    rows = []
    for r in records:
        mark = {"pass": "pass", "report": "report"}.get(r.status, "**miss**")
        row = {"id": f"`{r.id}`", "artefact": r.artefact, "paper": paper_cell(r)}
        row |= {"ours": ours_cell(r), "criterion": r.words, "status": mark}
        rows.append(row | ({"source": r.source} if source else {}))
    return table.markdown(rows)


def show(records: list[Record], *, source: bool = True) -> None:
    """Display records as a table in a notebook (returns nothing: a cell ending with it shows the
    table once, under nbval too)."""
    from IPython.display import Markdown, display

    display(Markdown(to_markdown(records, source=source)))
