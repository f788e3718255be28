"""report.table: the one renderer turns rows into a Markdown table, and refuses bad rows."""

from __future__ import annotations

import dataclasses

import pytest

from gated_attention.report import table


@dataclasses.dataclass(frozen=True)
class Row:
    size: int
    loss: float
    note: str | None = None


def test_rows_become_a_pipe_table_in_column_order():
    text = table.markdown(
        [Row(14, 1.23456e-5), Row(20, 0.5, "a|b")],
        {"size": "n", "loss": "loss", "note": "note"},
        {"loss": ".2e"},
    )
    assert text.splitlines() == [
        "| n | loss | note |",
        "|---|---|---|",
        "| 14 | 1.23e-05 | - |",
        "| 20 | 5.00e-01 | a\\|b |",
    ]


def test_dicts_default_to_their_keys_and_floats_to_three_digits():
    assert table.markdown([{"a": 1 / 3}]).splitlines()[-1] == "| 0.333 |"


def test_bad_rows_are_refused_by_name():
    with pytest.raises(ValueError, match="at least one row"):
        table.markdown([])
    with pytest.raises(ValueError, match="not in every row.*'x'"):
        table.markdown([{"a": 1}], {"x": "X"})
    with pytest.raises(TypeError, match="dataclass or a mapping"):
        table.markdown([3])


def test_show_displays_once_and_returns_nothing(monkeypatch):
    """A cell ending with ``table.show(...)`` shows one table, under nbval too (no return value
    for IPython to display a second time)."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    assert table.show([{"a": 1}]) is None
    assert len(shown) == 1 and shown[0].data.splitlines()[-1] == "| 1 |"
