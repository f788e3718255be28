"""Where a chapter's run came from, in one line: trained in this build, loaded from the results
cache, or read from a recorded run (``experiments.run_or_recorded``), with the commit that
trained it and whether the training code has changed since (its code hash against today's).

    run_source(result)    the line a chapter prints under the run it reads
    trained_by(result)    the words a row's note carries when its run is a recorded one: "trained
                          by the code at commit <short sha>", and whether that code is today's
    with_source(rows, result)  this build's rows read from ``result``, stored again with those
                          words in their notes (a quick run recorded with older code says so)
"""

from __future__ import annotations

import dataclasses
import textwrap

from ..experiments.cache import RunResult, code_hash
from ..experiments.recorded_runs import RETRAIN_ENV

__all__ = ["run_source", "trained_by", "with_source", "TRAINED_BY"]


#: the printed width (the book's column)
WIDTH = 75
#: how a row's note names the code that trained its recorded run
TRAINED_BY = "trained by the code at commit"


def run_source(result: RunResult, width: int = WIDTH) -> str:
    """Where ``result`` comes from and how long its training took, wrapped at ``width``."""
    return textwrap.fill(_source(result), width=width, break_on_hyphens=False)


def _commit(result: RunResult) -> str:
    return str(result.provenance.get("commit") or "unknown")[:7]


def _same_code(result: RunResult) -> bool:
    """Whether the code that trains ``result``'s config today is the code that trained it."""
    return result.meta.get("code_hash") == code_hash(config=result.config)


def _source(result: RunResult) -> str:
    seconds = float(result.meta.get("wall_time_s", float("nan")))
    if result.provenance:
        code = "unchanged since" if _same_code(result) else "changed since: retrain to see today's"
        return (
            f"read from the recorded run {result.path.name}: this config, {TRAINED_BY} "
            f"{_commit(result)} in {seconds:.0f} s ({_machine(result.meta)}); the training "
            f"code is {code}. {RETRAIN_ENV}=1 retrains it here."
        )
    if result.cached:
        return f"loaded from the results cache: {result.path.name} (trained in {seconds:.0f} s)"
    return f"trained in this build: {result.path.name}, {seconds:.0f} s"


def trained_by(result: RunResult) -> str:
    """ "" for a run trained in this build (or loaded from its cache); for a recorded run,
    "trained by the code at commit <short sha> (recorded run <name>)" and whether the code that
    trains its config today is that code ("training code unchanged since" or "not today's
    code: its training code has changed since"), from the code hashes (``cache.code_hash``)."""
    if not result.provenance:
        return ""
    same = _same_code(result)
    code = "training code unchanged since" if same else "its training code has changed since"
    where = f"recorded run {result.path.name}"
    if same:
        return f"{TRAINED_BY} {_commit(result)} ({where}; {code})"
    return f"{TRAINED_BY} {_commit(result)}, not today's code ({where}; {code})"


def with_source(records: list, result: RunResult) -> list:
    """This build's rows ``records`` (``scorecard.Record``) computed from ``result``: where
    ``result`` is a recorded run (``run_or_recorded`` read it instead of training), each row
    that is not itself a recorded run's (no ``run``) gets ``trained_by(result)`` at the end of
    its note and is stored again (``scorecard.store``: its file and this process's records);
    returns the rows, in order. A run of this build changes nothing; a note that already says
    it is left as it is."""
    from . import scorecard

    words = trained_by(result)
    if not words:
        return list(records)
    out = []
    for r in records:
        if r.run or TRAINED_BY in r.note:
            out.append(r)
            continue
        stamped = dataclasses.replace(r, note=f"{r.note}; {words}" if r.note else words)
        scorecard.store(stamped)
        out.append(stamped)
    return out


def _machine(meta: dict) -> str:
    hw = meta.get("hardware", {})
    threads = hw.get("torch_threads")
    where = hw.get("device", "cpu")
    return f"{where}, {threads} thread{'s' if threads != 1 else ''}" if threads else where
