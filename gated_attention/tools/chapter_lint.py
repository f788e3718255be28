"""Check that the code of the chapters fits the rendered column.

    python -m gated_attention.tools.chapter_lint                  every chapter, book/*.md
    python -m gated_attention.tools.chapter_lint book/intro.md    the chapters named
    python -m gated_attention.tools.chapter_lint --fix FILE ...   ruff-format each cell in place

In the rendered book at a 1280 x 900 window a code input block is 684 px wide, and 666 px inside
a collapsed (``hide-input``) cell; less 16 px padding on each side, at 8.43 px per monospace
character, that is 77 and 75 characters. ``WIDTH`` = 75 fits both; a longer line scrolls
sideways. For every ``{code-cell}`` of each chapter (jupytext MyST), this reports

- every line of code longer than ``WIDTH`` (file, line number in the ``.md``, length);
- every cell whose code is not what ``ruff format --line-length WIDTH`` makes of it.
- every ``def``, ``async def`` or ``class`` statement, at any indentation (file, line number):
  a chapter narrates, its functions live in the package (``report/``).
- every cell of more than ``MAX_CELL_LINES`` lines of code (comments and blank lines count; the
  options do not): a chapter leads with the claim, the package computes and formats.

The cells are read by jupytext (``jupytext.read``: the options are not code) and formatted
as ruff formats a notebook (the cells written to a temporary ``.ipynb``, ``ruff format`` run on
it): IPython magics are understood, and a ``;`` closing a cell (it hides the cell's value) is
kept. ``--fix`` puts each cell's formatted code in place of its code in the ``.md``, and
touches nothing else (the long lines ruff cannot split, such as strings and comments, are still
reported). The exit status is 1 when anything was reported.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat

__all__ = [
    "WIDTH",
    "Cell",
    "cells",
    "long_lines",
    "definitions",
    "MAX_CELL_LINES",
    "too_long",
    "ruff_format",
    "check",
    "main",
]

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 75
FENCE = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")
DEFINITION = re.compile(r"^\s*(async\s+def|def|class)\s+\w")
#: the most lines of code a cell of a chapter may have
MAX_CELL_LINES = 15


@dataclass(frozen=True)
class Cell:
    """The code of one code cell: its lines and the .md line number of the first (1-based)."""

    file: Path
    first: int
    lines: tuple[str, ...]

    @property
    def code(self) -> str:
        return "\n".join(self.lines)


def cells(path: Path) -> list[Cell]:
    """The code cells of a MyST chapter as jupytext reads them, each at the ``.md`` line of its
    first line of code (the first line after its fence that is that line)."""
    lines = path.read_text().splitlines()
    fences = [i for i, line in enumerate(lines) if FENCE.match(line)]
    code = [c.source for c in jupytext.read(path).cells if c.cell_type == "code"]
    found = []
    for fence, source in zip(fences, code, strict=True):
        body = tuple(source.splitlines())
        first = next(
            (i for i in range(fence + 1, len(lines)) if body and lines[i] == body[0]), fence
        )
        found.append(Cell(path, first + 1, body))
    return found


def long_lines(cell: Cell, width: int = WIDTH) -> list[tuple[int, int]]:
    """(line number in the .md, length) of each line of the cell longer than ``width``."""
    return [(cell.first + k, len(line)) for k, line in enumerate(cell.lines) if len(line) > width]


def definitions(cell: Cell) -> list[tuple[int, str]]:
    """(line number in the .md, keyword) of each ``def``, ``async def`` or ``class`` statement of
    the cell, at any indentation (a line that starts with one, as a regex finds it)."""
    found = []
    for k, line in enumerate(cell.lines):
        match = DEFINITION.match(line)
        if match:
            found.append((cell.first + k, " ".join(match.group(1).split())))
    return found


def too_long(cell: Cell, limit: int = MAX_CELL_LINES) -> int | None:
    """The number of lines of code of the cell if it has more than ``limit``, else None (every
    line after the options counts, comments and blank lines too)."""
    return len(cell.lines) if len(cell.lines) > limit else None


def ruff_format(codes: list[str], width: int = WIDTH) -> list[str]:
    """Each cell's code as ``ruff format --line-length width`` formats it in a notebook."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in codes])
    ruff = Path(sys.executable).with_name("ruff")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chapter.ipynb"
        nbformat.write(notebook, path)
        command = [str(ruff) if ruff.exists() else "ruff", "format", "--line-length", str(width)]
        config = ["--config", str(ROOT / "pyproject.toml")]
        result = subprocess.run([*command, *config, str(path)], capture_output=True, text=True)
        if result.returncode != 0:
            raise ValueError(result.stderr.strip() or "ruff format failed")
        return [c.source for c in nbformat.read(path, as_version=4).cells]


def check(path: Path, fix: bool = False, width: int = WIDTH) -> list[str]:
    """The problems of one chapter, as lines to print."""
    found = [c for c in cells(path) if c.lines]
    try:
        formatted = ruff_format([c.code for c in found], width)
    except ValueError as error:
        return [f"{path}: ruff cannot format its cells: {error}"]
    changed = [(c, f) for c, f in zip(found, formatted, strict=True) if f != c.code]
    if fix and changed:
        lines = path.read_text().splitlines(keepends=True)
        for cell, new in reversed(changed):
            start = cell.first - 1
            lines[start : start + len(cell.lines)] = [line + "\n" for line in new.splitlines()]
        path.write_text("".join(lines))
        return check(path, width=width)  # line numbers of the rewritten file
    problems = [f"{path}:{c.first}: cell is not ruff-formatted" for c, _ in changed]
    for cell in found:
        for number, length in long_lines(cell, width):
            problems.append(f"{path}:{number}: line of {length} characters (at most {width})")
        for number, keyword in definitions(cell):
            problems.append(
                f"{path}:{number}: {keyword} statement: define functions in the package "
                "(report/), not in a chapter"
            )
        count = too_long(cell)
        if count is not None:
            problems.append(
                f"{path}:{cell.first}: cell of {count} lines (at most {MAX_CELL_LINES}): let the "
                "package (report/) compute and format, or split it with a sentence between"
            )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="chapters (default: book/*.md)")
    parser.add_argument("--fix", action="store_true", help="ruff-format each cell in place")
    args = parser.parse_args(argv)
    files = args.files or sorted((ROOT / "book").glob("*.md"))
    failed = False
    for path in files:
        for problem in check(path, fix=args.fix):
            print(problem)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
