"""The one table renderer: rows (dataclasses or dicts) to a Markdown table, shown in a chapter.

``columns`` maps each field to its header, in order (default: every field, its name as header);
``formats`` maps a field to a format spec (``".3g"``) or a callable (``cell``). Captions and
sentences stay in the chapter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def _as_dict(row: Any) -> dict:
    if dataclasses.is_dataclass(row) and not isinstance(row, type):
        return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}
    if isinstance(row, Mapping):
        return dict(row)
    raise TypeError(f"a table row must be a dataclass or a mapping, not {type(row).__name__}")


def cell(value: Any, fmt: str | Callable[[Any], str] | None = None) -> str:
    """One cell's text: ``fmt`` applied, else floats ``.3g``, None as a dash; pipes escaped."""
    if callable(fmt):
        text = fmt(value)
    elif value is None:
        text = "-"
    elif fmt is not None:
        text = format(value, fmt)
    elif isinstance(value, float):
        text = format(value, ".3g")
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(
    rows: Sequence[Any],
    columns: Mapping[str, str] | None = None,
    formats: Mapping[str, str | Callable[[Any], str]] | None = None,
) -> str:
    """``rows`` as a Markdown pipe table: a header of ``columns``' values, one line per row; a
    ValueError for no rows or a column some row lacks."""
    dicts = [_as_dict(r) for r in rows]
    if not dicts:
        raise ValueError("a table needs at least one row")
    columns = dict(columns) if columns else {k: k for k in dicts[0]}
    missing = [k for k in columns if any(k not in d for d in dicts)]
    if missing:
        raise ValueError(f"columns not in every row: {missing}")
    formats = formats or {}
    lines = [
        "| " + " | ".join(columns.values()) + " |",
        "|" + "---|" * len(columns),
    ]
    for d in dicts:
        lines.append("| " + " | ".join(cell(d[k], formats.get(k)) for k in columns) + " |")
    return "\n".join(lines)


def show(rows, columns=None, formats=None) -> None:
    """Display ``markdown(rows, columns, formats)``; it returns nothing, so that a cell ending
    with it shows the table once, even under nbval (which ignores a closing ``;``)."""
    from IPython.display import Markdown, display

    display(Markdown(markdown(rows, columns, formats)))
