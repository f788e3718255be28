"""The words a scorecard row's note carries when its run is a recorded one: the commit that
trained it, and whether that code is today's (``readings.provenance``).

    trained_by    those words for a run ("" for one trained in this build)
    with_source   this build's rows read from a run, stored again with those words in their notes
"""

from __future__ import annotations

import dataclasses

from ..experiments.cache import RunResult
from ..readings.provenance import source

#: how a row's note names the code that trained its recorded run
TRAINED_BY = "trained by the code at commit"


def trained_by(result: RunResult) -> str:
    """ "" for a run trained in this build (or loaded from its cache); for a recorded run,
    "trained by the code at commit <short sha>" and whether today's code for its config is that
    code (from the code hashes, ``cache.code_hash``)."""
    if not result.provenance:
        return ""
    s = source(result)
    if s.code == "unchanged":
        return f"{TRAINED_BY} {s.commit} (recorded run {s.run}; training code unchanged since)"
    return (
        f"{TRAINED_BY} {s.commit}, not today's code "
        f"(recorded run {s.run}; its training code has changed since)"
    )


def with_source(records: list, result: RunResult) -> list:
    """``records`` (``scorecard.Record``) computed from ``result``, in order: where ``result`` is
    a recorded run, each build row (no ``run``) whose note lacks it gets ``trained_by(result)``
    appended and is stored again (``scorecard.store``)."""
    from . import scorecard

    words = trained_by(result)
    out = []
    for r in records:
        if words and not r.run and TRAINED_BY not in r.note:
            r = dataclasses.replace(r, note=f"{r.note}; {words}" if r.note else words)
            scorecard.store(r)
        out.append(r)
    return out
