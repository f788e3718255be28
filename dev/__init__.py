"""The repository's developer hooks, run by pre-commit (``make lint``) from the repository and
never installed with the package:

chapter_lint    the chapters' code cells: no definitions, at most 15 lines, a Python kernelspec;
                ``--notebooks DIR`` writes them as notebooks for ruff
                (``python -m dev.chapter_lint``)
workflow_lint   the workflows' run: scripts: actionlint where it is on PATH, else shellcheck
"""
