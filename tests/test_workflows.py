"""The workflow lint (``make lint``): our workflows pass; a job without ``runs-on`` and a ``run:``
script with a shell error fail. The fallback (schema + shellcheck) is tested everywhere; actionlint
too where it is on PATH (the test workflow installs it). zizmor (``make lint``'s security audit,
offline) passes our workflows and reports a checkout that keeps its credentials."""

import shutil
import subprocess
from pathlib import Path

import pytest

from gated_attention.tools import workflow_lint

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
CHECKERS = [
    pytest.param(False, id="fallback"),
    pytest.param(
        True,
        id="actionlint",
        marks=pytest.mark.skipif(
            shutil.which("actionlint") is None, reason="actionlint is not on PATH"
        ),
    ),
]

GOOD = """\
name: ci
on: [push]
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: greet
        run: |
          name="${{ github.actor }}"
          echo "hello $name"
"""

NO_RUNS_ON = """\
name: ci
on: [push]
jobs:
  build:
    steps:
      - run: echo hello
"""

SHELL_ERROR = """\
name: ci
on: [push]
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - name: broken
        run: |
          if [ -f setup.cfg ]; then
            echo found
"""


def _write(tmp_path, text):
    path = tmp_path / "ci.yml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("use_actionlint", CHECKERS)
def test_our_workflows_pass(use_actionlint):
    files = workflow_lint.workflow_files([WORKFLOWS])
    assert {f.name for f in files} >= {"test.yml", "book.yml"}
    checker, problems = workflow_lint.lint(files, use_actionlint=use_actionlint)
    assert problems == [], f"{checker}:\n" + "\n".join(problems)


@pytest.mark.parametrize("use_actionlint", CHECKERS)
def test_a_clean_workflow_with_an_expression_passes(tmp_path, use_actionlint):
    _, problems = workflow_lint.lint([_write(tmp_path, GOOD)], use_actionlint=use_actionlint)
    assert problems == []


@pytest.mark.parametrize("use_actionlint", CHECKERS)
def test_a_job_without_runs_on_fails(tmp_path, use_actionlint):
    _, problems = workflow_lint.lint([_write(tmp_path, NO_RUNS_ON)], use_actionlint=use_actionlint)
    assert problems
    assert "runs-on" in "\n".join(problems) or not use_actionlint


@pytest.mark.parametrize("use_actionlint", CHECKERS)
def test_a_run_script_with_a_shell_error_fails(tmp_path, use_actionlint):
    _, problems = workflow_lint.lint([_write(tmp_path, SHELL_ERROR)], use_actionlint=use_actionlint)
    assert any("SC" in p or "shellcheck" in p for p in problems), problems


def test_the_fallback_names_the_step_and_the_code(tmp_path):
    _, problems = workflow_lint.lint([_write(tmp_path, SHELL_ERROR)], use_actionlint=False)
    assert any("job 'build', step 'broken'" in p and "SC1046" in p for p in problems), problems


def test_expressions_become_placeholders_of_the_same_length():
    script = 'echo "${{ github.sha }}"\nx=${{ matrix.a\n }}'
    replaced = workflow_lint.placeholder(script)
    assert "${{" not in replaced
    assert [len(line) for line in replaced.split("\n")] == [len(s) for s in script.split("\n")]


def test_run_scripts_reads_steps_and_shells(tmp_path):
    path = _write(
        tmp_path,
        GOOD + "      - run: Write-Output hi\n        shell: pwsh\n",
    )
    scripts = workflow_lint.run_scripts(path)
    assert [(s.step, s.shell) for s in scripts] == [("greet", "bash"), ("step 3", "pwsh")]


def _zizmor(path):
    zizmor = workflow_lint._tool("zizmor")
    assert zizmor, "zizmor not found: install the test extra (pip install -e '.[test]')"
    return subprocess.run([zizmor, "--offline", str(path)], capture_output=True, text=True)


def test_zizmor_passes_our_workflows():
    result = _zizmor(WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


CHECKOUT = """\
name: ci
on: [push]
permissions:
  contents: read
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
{with_}      - run: echo hello
"""


def test_zizmor_reports_a_checkout_that_persists_credentials(tmp_path):
    result = _zizmor(_write(tmp_path, CHECKOUT.format(with_="")))
    assert result.returncode != 0
    assert "artipacked" in result.stdout and "persist-credentials: false" in result.stdout
    fixed = CHECKOUT.format(with_="        with:\n          persist-credentials: false\n")
    result = _zizmor(_write(tmp_path, fixed))
    assert result.returncode == 0, result.stdout


def test_main_reports_the_checker(tmp_path, capsys):
    assert workflow_lint.main(["--fallback", str(_write(tmp_path, GOOD))]) == 0
    assert "check-jsonschema" in capsys.readouterr().out
    assert workflow_lint.main(["--fallback", str(_write(tmp_path, NO_RUNS_ON))]) == 1


# The book workflow publishes the executed notebooks for Colab (tools/launch_links.py).


def test_colab_buttons_open_the_published_notebooks():
    from gated_attention.tools import launch_links

    url = "https://colab.research.google.com/github/o/r/blob/main/book/intro.ipynb"
    buttons = [{"type": "group", "buttons": [{"url": url}, {"url": "https://mybinder.org/x/main"}]}]
    launch_links.retarget_colab(buttons, "main")
    assert buttons[0]["buttons"][0]["url"].endswith("/o/r/blob/notebooks/book/intro.ipynb")
    assert buttons[0]["buttons"][1]["url"] == "https://mybinder.org/x/main"


def test_the_workflow_publishes_to_the_branch_the_buttons_name():
    from gated_attention.tools import launch_links

    book = (WORKFLOWS / "book.yml").read_text()
    assert "launch_links publish" in book and "launch_links branch" in book
    url, _ = launch_links.repository()
    assert launch_links.colab_url(url, "book/intro.ipynb").startswith(
        f"https://colab.research.google.com/github/{url.split('github.com/')[1]}/blob/notebooks/"
    )


def test_published_notebooks_start_with_the_install_cell(tmp_path):
    import nbformat

    from gated_attention.tools import launch_links

    (tmp_path / "_config.yml").write_text(
        "repository:\n  url: https://github.com/o/r\n  branch: main\n"
    )
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\ndependencies = ["torch==2.13.0", "numpy==2.4.6", "sympy==1.14.0"]\n'
    )
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    executed = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    nbformat.write(executed, tmp_path / "book" / "intro.ipynb")

    (path,) = launch_links.publish_notebooks(tmp_path / "out", root=tmp_path, ref="abc123")
    cells = nbformat.read(path, as_version=4).cells
    assert path == tmp_path / "out" / "book" / "intro.ipynb"
    assert [c.cell_type for c in cells] == ["markdown", "code", "code"]
    install = cells[1].source
    assert 'gated-attention @ git+https://github.com/o/r@abc123" --no-deps' in install
    requirements = install.strip().splitlines()[-1]
    assert '"sympy==1.14.0"' in requirements and "torch" not in requirements
    assert nbformat.read(tmp_path / "book" / "intro.ipynb", as_version=4).cells[0].source == (
        "print(1)"
    )
