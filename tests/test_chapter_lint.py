"""The chapter lint: long code lines found where they are, options not code, ruff's layout."""

from gated_attention.tools import chapter_lint

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
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


def test_a_long_line_is_found_with_its_line_number(tmp_path, capsys):
    long = 'y = "' + "a" * 80 + '"'  # 86 characters, which ruff leaves as it is
    text = GOOD.replace("print(x)\n", f"print(x)\n{long}\n")
    path = write(tmp_path, text)
    number = text.splitlines().index(long) + 1
    assert chapter_lint.check(path) == [
        f"{path}:{number}: line of {len(long)} characters (at most {chapter_lint.WIDTH})"
    ]
    assert chapter_lint.main([str(path)]) == 1
    assert f"{path}:{number}:" in capsys.readouterr().out
    # a line of exactly WIDTH characters fits
    fits = 'y = "' + "a" * (chapter_lint.WIDTH - 6) + '"'
    assert len(fits) == chapter_lint.WIDTH
    assert chapter_lint.check(write(tmp_path, GOOD.replace("x = 1\n", f"x = 1\n{fits}\n"))) == []


def test_a_cell_ruff_would_change_is_reported_and_fixed(tmp_path):
    text = GOOD.replace("x = 1\n", "x=[1,2]\n")
    path = write(tmp_path, text)
    number = text.splitlines().index("x=[1,2]") + 1
    assert chapter_lint.check(path) == [f"{path}:{number}: cell is not ruff-formatted"]
    call = "result = some_function(first_argument=1, second_argument=2, third_argument=33)"
    path = write(tmp_path, GOOD.replace("x = 1\n", f"x=[1,2]\n{call}\n"))
    assert chapter_lint.check(path, fix=True) == []
    fixed = path.read_text()
    assert "x = [1, 2]\nresult = some_function(\n    first_argument=1," in fixed
    assert fixed.replace("x = [1, 2]\n", "").count("\n") > GOOD.count("\n")
    assert "verdict.glue_block(profile);\n" in fixed  # the trailing semicolon is kept
    assert ":tags: [parameters, remove-cell]\n" in fixed and "name: fig-long\n" in fixed


def test_cells_with_magics_are_formatted_as_in_a_notebook(tmp_path):
    path = write(tmp_path, GOOD.replace("x = 1\n", "%matplotlib inline\nx = 1\n"))
    assert chapter_lint.check(path) == []
    path = write(tmp_path, GOOD.replace("x = 1\n", "%matplotlib inline\nx=1\n"))
    number = path.read_text().splitlines().index("%matplotlib inline") + 1
    assert chapter_lint.check(path) == [f"{path}:{number}: cell is not ruff-formatted"]
    assert chapter_lint.main([str(path)]) == 1


def test_a_final_semicolon_is_kept_even_before_a_comment():
    long = "verdict.glue_block(profile);  # " + "a comment " * 6
    (formatted,) = chapter_lint.ruff_format([long])
    assert formatted.splitlines()[-1].startswith(");  # a comment")
    assert chapter_lint.ruff_format(["x = f(a,\n  b);", "y=2"]) == ["x = f(a, b);", "y = 2"]
    # only the last statement's semicolon hides a value; ruff drops the others
    assert chapter_lint.ruff_format(["show(rows);\nx = 1"]) == ["show(rows)\nx = 1"]


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
