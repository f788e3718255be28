"""A scorecard row (``Record``) and how its cells read; ``scorecard`` scores, stores and shows rows.

Record          one row: the paper's value, ours, the criterion, its status, notes
paper_values    the entries of ``paper_values.json`` by id, in file order
fmt             a value as a cell shows it
straddles       the threshold a row's interval over seeds straddles (it cannot decide)
ours_cell       our value with its interval; ``paper_cell``: the paper's, with a reference
                of ours labelled
"""

from __future__ import annotations

import dataclasses
import json
import math
from importlib import resources

#: the budget text of a row that needs no training
EXACT_BUDGET = "exact, no budget"
#: the note of a row scored on a recorded run made before its criterion was committed
#: (paper_values.json: ``set_after_runs``)
SET_AFTER = "criterion set after this run"
#: the note of a row scored on a recorded run whose analysis rule was changed after it ran
#: (paper_values.json: ``rule_set_after_runs``): it does not decide its claim's verdict
RULE_AFTER = "rule set after this run"
#: the note of such a row when the rule before it gives the same status (the row decides)
SAME_BEFORE = "rule set after this run; the rule in force then gives {before}, the same status"
#: the label of a reference value that is not the paper's (paper_values.json: ``reference``)
REF_OURS = "ref. (ours)"


@dataclasses.dataclass(frozen=True)
class Record:
    """One row of the scorecard."""

    id: str
    artefact: str
    paper: float | int | str | None
    ours: float | int | str | None  # None: no finite value was produced (always a miss)
    tolerance: float | list | None
    criterion: str
    words: str
    status: str
    profile: str
    source: str
    seeds: int | None = None
    note: str = ""
    run: str = ""  # the recorded run scored (a paper-budget run shipped with the package), if any
    budget: str = ""  # what it was trained with, against the paper's budget (verdict.budget)
    # what the criterion compares against when not the paper's value: always ours (paper_cell)
    reference: float | int | str | None = None
    # (low, high) of ours over seeds (None: a single value, or an open end); words say how
    interval: tuple | list | None = None


def paper_values() -> dict[str, dict]:
    """The entries of paper_values.json, keyed by id, in file order."""
    text = resources.files("gated_attention.report").joinpath("paper_values.json").read_text()
    return {entry["id"]: entry for entry in json.loads(text)["records"]}


def fmt(x) -> str:
    """A value as a cell shows it: None "n/a", lists bracketed, numbers to 3 significant digits."""
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if isinstance(x, list):
        return "[" + ", ".join(fmt(v) for v in x) + "]"
    if isinstance(x, int):
        return str(x)
    if x == 0:
        return "0"
    return f"{x:.3g}" if 1e-3 <= abs(x) < 1e4 else f"{x:.2e}"


def straddles(r: Record) -> float | None:
    """The threshold of the row's criterion that its interval over seeds straddles (it would pass
    at one end and miss at the other: the seeds cannot decide), or None (``straddled``)."""
    return straddled(r.criterion, r.tolerance, r.interval)


def straddled(criterion: str, tolerance, interval) -> float | None:
    """The threshold of a ``max`` or ``range`` criterion with ``tolerance`` that ``interval``
    (lo, hi) straddles, or None; an end that is None is open (a bound of ``max`` passes at it,
    so an interval ending at it does not straddle it). An open end reaches every threshold."""
    if interval is None or criterion not in ("max", "range"):
        return None
    lo, hi = interval
    lo = -math.inf if lo is None else lo
    hi = math.inf if hi is None else hi
    if criterion == "range" and lo < tolerance[0] <= hi:
        return tolerance[0]
    upper = tolerance if criterion == "max" else tolerance[1]
    return upper if lo <= upper < hi else None


def ours_cell(r: Record) -> str:
    """Our value, with its interval over seeds where the row has one ("1.43 [1.29, 2]")."""
    if r.interval is None:
        return fmt(r.ours)
    lo, hi = (("…" if v is None else fmt(v)) for v in r.interval)
    return f"{fmt(r.ours)} [{lo}, {hi}]"


def paper_cell(r: Record) -> str:
    """The paper column of a row: the paper's value, and the reference the criterion compares
    against where that differs from it, labelled as ours ("0.0947; ref. (ours) 7/74")."""
    text = fmt(r.paper)
    if r.reference is not None and r.reference != r.paper:
        text += f"; {REF_OURS} {fmt(r.reference)}"
    return text
