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
- in the chapters of ``SHORT_CELL_CHAPTERS``, every cell of more than ``MAX_CELL_LINES`` lines of
  code (comments and blank lines count; the options do not): a chapter leads with the claim, the
  package computes and formats. A chapter joins the tuple once none of its cells is longer.

The cell's options are not code: ``:key: value`` lines right after the fence, or a leading
``---`` ... ``---`` YAML block. A cell with IPython magics (``%``) or shell lines (``!``) is not
given to ruff (it is not Python); it is named in a note. A trailing ``;`` on the last line of a
cell (it hides the cell's value in a notebook) is kept, as ruff keeps it in notebooks.
``--fix`` rewrites each cell's code as ruff formats it (the long lines ruff cannot split, such
as strings and comments, are still reported). The exit status is 1 when anything was reported.
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "WIDTH",
    "Cell",
    "cells",
    "long_lines",
    "definitions",
    "MAX_CELL_LINES",
    "SHORT_CELL_CHAPTERS",
    "too_long",
    "ruff_format",
    "check",
    "main",
]

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 75
FENCE = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")
OPTION = re.compile(r"^:[\w-]+:")
MAGIC = re.compile(r"^\s*[%!]")
DEFINITION = re.compile(r"^\s*(async\s+def|def|class)\s+\w")
#: the most lines of code a cell of a chapter of SHORT_CELL_CHAPTERS may have
MAX_CELL_LINES = 15
#: the chapters (stems) held to MAX_CELL_LINES: every chapter (a test checks it)
SHORT_CELL_CHAPTERS = (
    "associative_recall",
    "beyond",
    "bibliography",
    "compressions",
    "construction",
    "equations",
    "execution_status",
    "gradient_descent",
    "how_many_neurons",
    "intro",
    "other_rnns_in_context",
    "performance",
    "rnns_learn_gd",
    "scorecard",
    "surplus_neurons",
    "teacher_identification",
    "use_the_package",
    "which_rnns_can_be_attention",
    "which_rnns_learn_attention",
)


@dataclass(frozen=True)
class Cell:
    """The code of one code cell: its lines and the .md line number of the first (1-based)."""

    file: Path
    first: int
    lines: tuple[str, ...]

    @property
    def code(self) -> str:
        return "\n".join(self.lines)


def cells(text: str, file: Path = Path("<text>")) -> list[Cell]:
    """The code cells of a MyST chapter, options left out."""
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        mark, count = re.escape(match.group(1)[0]), len(match.group(1))
        close = re.compile(f"^{mark}{{{count},}}\\s*$")
        i += 1
        if i < len(lines) and lines[i].strip() == "---":  # a YAML header
            i += 1
            while i < len(lines) and lines[i].strip() != "---":
                i += 1
            i += 1
        else:
            while i < len(lines) and OPTION.match(lines[i]):
                i += 1
        start = i
        while i < len(lines) and not close.match(lines[i]):
            i += 1
        found.append(Cell(file, start + 1, tuple(lines[start:i])))
        i += 1
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


def has_magic(cell: Cell) -> bool:
    return any(MAGIC.match(line) for line in cell.lines)


def last_code_token(code: str) -> tokenize.TokenInfo | None:
    """The last token of ``code`` that is neither a comment nor layout."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    last = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(code + "\n").readline):
            if token.type not in skip and token.type != tokenize.ENDMARKER:
                last = token
    except (tokenize.TokenError, SyntaxError):
        return None
    return last


def splice(code: str, row: int, col: int, old: str, new: str) -> str:
    """``code`` with ``old`` at (row, col) (tokenize's positions) replaced by ``new``."""
    lines = code.split("\n")
    line = lines[row - 1]
    assert line[col : col + len(old)] == old
    lines[row - 1] = line[:col] + new + line[col + len(old) :]
    return "\n".join(lines)


def ruff_format(code: str, width: int = WIDTH) -> str:
    """``code`` as ``ruff format --line-length width`` writes it (no final newline).

    A ``;`` ending the cell's last statement (a comment may follow it) hides the cell's value:
    it is taken off before ruff sees the code and put back after the last statement.
    """
    body = code.rstrip()
    last = last_code_token(body)
    semicolon = last is not None and last.type == tokenize.OP and last.string == ";"
    if semicolon:
        body = splice(body, *last.start, ";", "")
    ruff = Path(sys.executable).with_name("ruff")
    command = [str(ruff) if ruff.exists() else "ruff", "format", "--line-length", str(width)]
    result = subprocess.run(
        [*command, "--stdin-filename", "cell.py", "-"],
        input=body + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if result.returncode != 0:
        raise ValueError(result.stderr.strip() or "ruff format failed")
    formatted = result.stdout.rstrip("\n")
    if semicolon:
        end = last_code_token(formatted)
        if end is not None:
            formatted = splice(formatted, *end.end, "", ";")
    return formatted


def check(path: Path, fix: bool = False, width: int = WIDTH) -> list[str]:
    """The problems of one chapter, as lines to print (notes start with 'note:')."""
    text = path.read_text()
    problems = []
    replacements = []
    for cell in cells(text, path):
        if not cell.lines:
            continue
        if has_magic(cell):
            problems.append(f"note: {path}:{cell.first}: cell with magics or ! lines not formatted")
        else:
            try:
                formatted = ruff_format(cell.code, width)
            except ValueError as error:
                problems.append(f"{path}:{cell.first}: ruff cannot format the cell: {error}")
            else:
                if formatted != cell.code:
                    if fix:
                        replacements.append((cell, formatted))
                        cell = Cell(path, cell.first, tuple(formatted.splitlines()))
                    else:
                        problems.append(f"{path}:{cell.first}: cell is not ruff-formatted")
        for number, length in long_lines(cell, width):
            problems.append(f"{path}:{number}: line of {length} characters (at most {width})")
        for number, keyword in definitions(cell):
            problems.append(
                f"{path}:{number}: {keyword} statement: define functions in the package "
                "(report/), not in a chapter"
            )
        count = too_long(cell) if path.stem in SHORT_CELL_CHAPTERS else None
        if count is not None:
            problems.append(
                f"{path}:{cell.first}: cell of {count} lines (at most {MAX_CELL_LINES}): let the "
                "package (report/) compute and format, or split it with a sentence between"
            )
    if replacements:
        lines = text.splitlines()
        for cell, formatted in reversed(replacements):
            start = cell.first - 1
            lines[start : start + len(cell.lines)] = formatted.splitlines()
        path.write_text("\n".join(lines) + ("\n" if text.endswith("\n") else ""))
        problems = check(path, width=width)  # line numbers of the rewritten file
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
            failed = failed or not problem.startswith("note:")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
