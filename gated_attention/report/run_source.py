"""Where a chapter's run came from, in one line: trained in this build, loaded from the results
cache, or read from a recorded run (``experiments.run_or_recorded``), with the commit that
trained it and whether the training code has changed since (its code hash against today's).

    run_source(result)   the line a chapter prints under the run it reads
"""

from __future__ import annotations

import textwrap

from ..experiments.cache import RunResult, code_hash
from ..experiments.recorded_runs import RETRAIN_ENV

__all__ = ["run_source"]


#: the printed width (the book's column)
WIDTH = 75


def run_source(result: RunResult, width: int = WIDTH) -> str:
    """Where ``result`` comes from and how long its training took, wrapped at ``width``."""
    return textwrap.fill(_source(result), width=width, break_on_hyphens=False)


def _source(result: RunResult) -> str:
    seconds = float(result.meta.get("wall_time_s", float("nan")))
    if result.provenance:
        commit = str(result.provenance.get("commit", "unknown"))[:7]
        same = result.meta.get("code_hash") == code_hash(config=result.config)
        code = "unchanged since" if same else "changed since: retrain to see today's"
        return (
            f"read from the recorded run {result.path.name}: this config, trained in "
            f"{seconds:.0f} s ({_machine(result.meta)}), recorded at commit {commit}; the "
            f"training code is {code}. {RETRAIN_ENV}=1 retrains it here."
        )
    if result.cached:
        return f"loaded from the results cache: {result.path.name} (trained in {seconds:.0f} s)"
    return f"trained in this build: {result.path.name}, {seconds:.0f} s"


def _machine(meta: dict) -> str:
    hw = meta.get("hardware", {})
    threads = hw.get("torch_threads")
    where = hw.get("device", "cpu")
    return f"{where}, {threads} thread{'s' if threads != 1 else ''}" if threads else where
