"""The rules of a chapter's code cells that ruff does not check (a hook of .pre-commit-config.yaml).

    python -m dev.chapter_lint                  every chapter, book/*.md
    python -m dev.chapter_lint book/intro.md    the chapters named

For every ``{code-cell}`` of each chapter (jupytext MyST), this reports

- every ``def``, ``async def`` or ``class`` statement, at any indentation (file, line number):
  a chapter narrates, its functions live in the package (``report/``);
- every cell of more than ``MAX_CELL_LINES`` lines of code (comments and blank lines count; the
  options do not): a chapter leads with the claim, the package computes and formats;
- a chapter with code whose kernelspec does not say ``language: python``: ruff skips such a
  notebook, so the chapters' ruff hooks would pass it unread.

The lines' width (75 characters, the rendered column) and ruff's layout are the hooks
``chapter-ruff-check`` and ``chapter-ruff-format``: ruff on each chapter as a notebook. The cells
are read by jupytext (``jupytext.read``: the options are not code). The exit status is 1 when
anything was reported.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import jupytext

__all__ = [
    "Cell",
    "cells",
    "definitions",
    "MAX_CELL_LINES",
    "too_long",
    "check",
    "write_notebooks",
    "main",
]

ROOT = Path(__file__).resolve().parents[1]
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


def cells(path: Path, notebook=None) -> list[Cell]:
    """The code cells of a MyST chapter as jupytext reads them, each at the ``.md`` line of its
    first line of code (the first line after its fence that is that line)."""
    lines = path.read_text().splitlines()
    fences = [i for i, line in enumerate(lines) if FENCE.match(line)]
    notebook = notebook or jupytext.read(path)
    code = [c.source for c in notebook.cells if c.cell_type == "code"]
    found = []
    for fence, source in zip(fences, code, strict=True):
        body = tuple(source.splitlines())
        first = next(
            (i for i in range(fence + 1, len(lines)) if body and lines[i] == body[0]), fence
        )
        found.append(Cell(path, first + 1, body))
    return found


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


def check(path: Path) -> list[str]:
    """The problems of one chapter, as lines to print."""
    notebook = jupytext.read(path)
    found = [c for c in cells(path, notebook) if c.lines]
    problems = []
    language = notebook.metadata.get("kernelspec", {}).get("language")
    if found and language != "python":
        problems.append(
            f"{path}:1: kernelspec without `language: python` (it has {language!r}): "
            "ruff would skip the chapter's cells"
        )
    for cell in found:
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


def write_notebooks(files: list[Path], folder: Path) -> None:
    """Each chapter as the notebook ``folder/<name>.ipynb`` (jupytext), for ruff to read (the
    chapter-ruff hook): written there only, never beside the chapter."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in files:
        jupytext.write(jupytext.read(path), folder / f"{path.stem}.ipynb")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="chapters (default: book/*.md)")
    parser.add_argument(
        "--notebooks", type=Path, metavar="DIR", help="only write each chapter as DIR/<name>.ipynb"
    )
    args = parser.parse_args(argv)
    files = args.files or sorted((ROOT / "book").glob("*.md"))
    if args.notebooks:
        write_notebooks(files, args.notebooks)
        return 0
    problems = [problem for path in files for problem in check(path)]
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
