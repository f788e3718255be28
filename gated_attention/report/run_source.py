"""The words a scorecard row's note carries when the run it was read from is a recorded one:
the commit that trained it, and whether that code is today's (``readings.provenance``).

    trained_by(result)          "trained by the code at commit <short sha>" and whether that
                                code is today's; "" for a run trained in this build
    with_source(rows, result)   this build's rows read from ``result``, stored again with those
                                words in their notes (a quick run recorded with older code says so)
"""

from __future__ import annotations

import dataclasses

from ..experiments.cache import RunResult
from ..readings.provenance import same_code

#: how a row's note names the code that trained its recorded run
TRAINED_BY = "trained by the code at commit"


def trained_by(result: RunResult) -> str:
    """ "" for a run trained in this build (or loaded from its cache); for a recorded run,
    "trained by the code at commit <short sha> (recorded run <name>)" and whether the code that
    trains its config today is that code ("training code unchanged since" or "not today's
    code: its training code has changed since"), from the code hashes (``cache.code_hash``)."""
    if not result.provenance:
        return ""
    same = same_code(result)
    code = "training code unchanged since" if same else "its training code has changed since"
    where = f"recorded run {result.path.name}"
    commit = str(result.provenance.get("commit") or "unknown")[:7]
    if same:
        return f"{TRAINED_BY} {commit} ({where}; {code})"
    return f"{TRAINED_BY} {commit}, not today's code ({where}; {code})"


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
