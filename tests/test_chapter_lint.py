"""The chapters' lint: chapter_lint's rules (no definitions, at most 15 lines a cell, options are
not code), and the chapter-ruff hook of .pre-commit-config.yaml (ruff on each chapter as a
notebook, 75 columns), run as pre-commit runs it: long lines and ruff's layout found, the
chapter left as it was."""

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from dev import chapter_lint

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A chapter

Prose may be as long as it likes, it wraps: {cite:p}`somebody2024` and much more text after it.
"""

GOOD = (
    HEADER
    + """
```{code-cell} ipython3
:tags: [parameters, remove-cell]
profile = "quick"
```

```{code-cell} ipython3
---
mystnb:
  figure:
    caption: |
      A caption line that is a good deal longer than seventy-seven characters, and is no code.
    name: fig-long
---
x = 1
print(x)
```

```{code-cell} ipython3
:tags: [remove-input]
verdict.glue_block(profile);
```

```{glue:md} verdict
:format: myst
```
"""
)


def write(tmp_path, text, name="chapter.md"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_well_formatted_chapter_passes(tmp_path, capsys):
    path = write(tmp_path, GOOD)
    assert chapter_lint.check(path) == []
    assert chapter_lint.main([str(path)]) == 0
    assert capsys.readouterr().out == ""
    chapter_lint.main(["--notebooks", str(tmp_path / "out"), str(path)])
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["chapter.ipynb"]


def test_options_and_yaml_headers_are_not_code(tmp_path):
    found = chapter_lint.cells(write(tmp_path, GOOD))
    assert [cell.lines for cell in found] == [
        ('profile = "quick"',),
        ("x = 1", "print(x)"),
        ("verdict.glue_block(profile);",),
    ]
    lines = GOOD.splitlines()
    assert [lines[cell.first - 1] for cell in found] == [
        'profile = "quick"',
        "x = 1",
        "verdict.glue_block(profile);",
    ]


def run_hook(name, *files):
    """The hook ``name`` of .pre-commit-config.yaml on ``files``, as pre-commit runs it (from the
    repository, the virtual environment first on PATH)."""
    config = yaml.safe_load((chapter_lint.ROOT / ".pre-commit-config.yaml").read_text())
    hook = next(h for repo in config["repos"] for h in repo["hooks"] if h["id"] == name)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    command = [*shlex.split(hook["entry"]), *map(str, files)]
    env = {**os.environ, "PATH": path}
    result = subprocess.run(command, cwd=chapter_lint.ROOT, env=env, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_ruff_hook_finds_long_lines_and_layout_and_writes_nothing(tmp_path):
    chapter = GOOD.replace("verdict.glue_block(profile);", "print(profile);")
    good = write(tmp_path, chapter, "good.md")
    long = 'y = "' + "a" * 80 + '"'  # 86 characters, which ruff format leaves as it is
    too_long = write(tmp_path, chapter.replace("print(x)\n", f"print(x)\n{long}\n"), "long.md")
    messy = write(tmp_path, chapter.replace("x = 1\n", "x=[1,2]\n"), "messy.md")
    before = {p: digest(p) for p in (good, too_long, messy)}
    assert run_hook("chapter-ruff", good)[0] == 0
    code, out = run_hook("chapter-ruff", too_long)
    assert code == 1 and "long.ipynb:cell 3:3:76: E501 Line too long (86 > 75)" in out, out
    code, out = run_hook("chapter-ruff", messy)
    assert code == 1 and "-x=[1,2]\n+x = [1, 2]" in out, out
    assert {p: digest(p) for p in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.md", "long.md", "messy.md"]


def test_a_chapter_ruff_would_not_read_is_reported(tmp_path):
    path = write(tmp_path, GOOD.replace("  language: python\n", ""))
    assert chapter_lint.check(path) == [
        f"{path}:1: kernelspec without `language: python` (it has None): ruff would skip the "
        "chapter's cells"
    ]


def test_a_definition_in_a_code_cell_is_an_error(tmp_path, capsys):
    helper = "\n\ndef helper(x):\n    return x + 1\n\n\nprint(helper(x))\n"
    text = GOOD.replace("print(x)\n", helper)
    path = write(tmp_path, text)
    number = text.splitlines().index("def helper(x):") + 1
    message = "define functions in the package (report/), not in a chapter"
    assert chapter_lint.check(path) == [f"{path}:{number}: def statement: {message}"]
    assert chapter_lint.main([str(path)]) == 1
    assert f"{path}:{number}: def statement" in capsys.readouterr().out
    # at any indentation, async def and class too
    nested = "if x:\n\n    async def fetch():\n        pass\n\n\nclass Row:\n    pass\n"
    text = GOOD.replace("print(x)\n", nested)
    found = chapter_lint.check(write(tmp_path, text))
    lines = text.splitlines()
    numbers = [lines.index("    async def fetch():") + 1, lines.index("class Row:") + 1]
    assert found == [
        f"{path}:{numbers[0]}: async def statement: {message}",
        f"{path}:{numbers[1]}: class statement: {message}",
    ]
    # the same words in prose, a string or a call are no definition
    prose = GOOD.replace("# A chapter\n", "# A chapter\n\ndef f(x): in prose is text.\n")
    code = 'print("def f(x):")\nundefined = 1\n'
    assert chapter_lint.check(write(tmp_path, prose.replace("print(x)\n", code))) == []


def test_a_long_cell_is_reported(tmp_path):
    def chapter(lines, name):
        body = "\n".join(f"x{k} = {k}" for k in range(lines))  # the options do not count
        return write(tmp_path, GOOD.replace("x = 1\nprint(x)\n", body + "\n"), name)

    limit = chapter_lint.MAX_CELL_LINES
    assert limit == 15
    assert chapter_lint.check(chapter(limit, "short.md")) == []
    path = chapter(limit + 1, "short.md")
    first = path.read_text().splitlines().index("x0 = 0") + 1
    assert chapter_lint.check(path) == [
        f"{path}:{first}: cell of 16 lines (at most 15): let the package (report/) compute "
        "and format, or split it with a sentence between"
    ]
    assert chapter_lint.main([str(path)]) == 1
    # comments and blank lines are lines of the cell too
    padded = path.read_text().replace("x0 = 0\nx1 = 1\n", "# a comment\n\nx0 = 0\n")
    assert len(chapter_lint.check(write(tmp_path, padded, "short.md"))) == 1


def test_every_chapter_complies():
    for path in sorted((chapter_lint.ROOT / "book").glob("*.md")):
        assert chapter_lint.check(path) == [], path.name
