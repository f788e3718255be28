"""The workflow hooks of .pre-commit-config.yaml (``make lint``): our workflows pass each; a job
without ``runs-on`` fails the vendored GitHub-workflow schema (check-jsonschema), a ``run:`` script
with a shell error fails dev/workflow_lint.py (actionlint where it is on PATH, else shellcheck:
both tested, the first where it is there), and zizmor (offline) reports a checkout that keeps its
credentials."""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dev import workflow_lint

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))
CHECKERS = [
    pytest.param(False, id="shellcheck"),
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


def run_hook(name, *files):
    """The hook ``name`` of .pre-commit-config.yaml on ``files``, as pre-commit runs it (from the
    repository, the virtual environment first on PATH)."""
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hook = next(h for repo in config["repos"] for h in repo["hooks"] if h["id"] == name)
    assert hook["files"] == r"^\.github/workflows/[^/]*\.ya?ml$"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    command = [*shlex.split(hook["entry"]), *map(str, files)]
    env = {**os.environ, "PATH": path}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize("hook", ["workflow-schema", "actionlint", "zizmor"])
def test_each_workflow_hook_passes_ours(hook):
    assert {f.name for f in FILES} >= {"test.yml", "book.yml"}
    code, out = run_hook(hook, *FILES)
    assert code == 0, out


def test_the_schema_hook_fails_a_job_without_runs_on(tmp_path):
    code, out = run_hook("workflow-schema", _write(tmp_path, NO_RUNS_ON))
    assert code == 1 and "'runs-on' is a required property" in out, out


def test_the_actionlint_hook_fails_a_run_script_with_a_shell_error(tmp_path):
    code, out = run_hook("actionlint", _write(tmp_path, SHELL_ERROR))
    assert code == 1 and "SC1046" in out, out


@pytest.mark.parametrize("use_actionlint", CHECKERS)
def test_our_workflows_pass(use_actionlint):
    checker, problems = workflow_lint.lint(FILES, use_actionlint=use_actionlint)
    assert problems == [], f"{checker}:\n" + "\n".join(problems)


@pytest.mark.parametrize("use_actionlint", CHECKERS)
def test_a_clean_workflow_with_an_expression_passes(tmp_path, use_actionlint):
    _, problems = workflow_lint.lint([_write(tmp_path, GOOD)], use_actionlint=use_actionlint)
    assert problems == []


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


def test_the_zizmor_hook_reports_a_checkout_that_persists_credentials(tmp_path):
    code, out = run_hook("zizmor", _write(tmp_path, CHECKOUT.format(with_="")))
    assert code != 0 and "artipacked" in out and "persist-credentials: false" in out, out
    fixed = CHECKOUT.format(with_="        with:\n          persist-credentials: false\n")
    code, out = run_hook("zizmor", _write(tmp_path, fixed))
    assert code == 0, out


def test_main_reports_the_checker(tmp_path, capsys):
    assert workflow_lint.main(["--fallback", str(_write(tmp_path, GOOD))]) == 0
    assert "shellcheck on 1 run: script(s)): ok" in capsys.readouterr().out
    assert workflow_lint.main(["--fallback", str(_write(tmp_path, SHELL_ERROR))]) == 1


# The book workflow publishes the executed notebooks for Colab (book/_ext/launch_links.py).


def test_colab_buttons_open_the_published_notebooks():
    import launch_links

    url = "https://colab.research.google.com/github/o/r/blob/main/book/intro.ipynb"
    buttons = [{"type": "group", "buttons": [{"url": url}, {"url": "https://mybinder.org/x/main"}]}]
    launch_links.retarget_colab(buttons, "main")
    assert buttons[0]["buttons"][0]["url"].endswith("/o/r/blob/notebooks/book/intro.ipynb")
    assert buttons[0]["buttons"][1]["url"] == "https://mybinder.org/x/main"


def test_the_workflow_publishes_to_the_branch_the_buttons_name():
    import launch_links

    book = (WORKFLOWS / "book.yml").read_text()
    assert "launch_links.py publish" in book and "launch_links.py branch" in book
    url, _ = launch_links.repository()
    assert launch_links.colab_url(url, "book/intro.ipynb").startswith(
        f"https://colab.research.google.com/github/{url.split('github.com/')[1]}/blob/notebooks/"
    )


def test_published_notebooks_start_with_the_install_cell(tmp_path):
    import launch_links
    import nbformat

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
