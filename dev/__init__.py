"""The repository's developer tools, run from the repository and never installed with the
package: the hooks pre-commit runs (``make lint``), and the re-recording of the quick runs the
package ships (it writes into the repository's ``gated_attention/recorded/``):

chapter_lint    the chapters' code cells: no definitions, at most 15 lines, a Python kernelspec;
                ``--notebooks DIR`` writes them as notebooks for ruff
                (``python -m dev.chapter_lint``)
workflow_lint   the workflows' run: scripts: actionlint where it is on PATH, else shellcheck
quick_runs      the quick runs that ship recorded: is their training code unchanged? re-record
                (``python -m dev.quick_runs [--rerecord]``)
"""
