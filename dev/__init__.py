"""The repository's developer tools, run from the repository and never installed with the
package: the hooks pre-commit runs (``make lint``), and recording runs into the package's
``gated_attention/recorded/`` (what it ships; these write into the repository):

chapter_lint    the chapters' code cells: no definitions, at most 15 lines, a Python kernelspec;
                ``--notebooks DIR`` writes them as notebooks for ruff
                (``python -m dev.chapter_lint``)
workflow_lint   the workflows' run: scripts: actionlint where it is on PATH, else shellcheck
record          run an experiment and record it in gated_attention/recorded/ with its provenance
                (``python -m dev.record EXPERIMENT --profile P --name NAME``)
readings        the chapters' readings of recorded runs, shipped beside them
                (``python -m dev.readings``)
quick_runs      the quick runs that ship recorded: is their training code unchanged? re-record
                (``python -m dev.quick_runs [--rerecord]``)
"""
