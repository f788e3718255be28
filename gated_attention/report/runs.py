"""One line per results entry, for the chapters: what a recorded run is and where it ran."""

from __future__ import annotations

__all__ = ["where", "provenance_line"]


def where(meta: dict) -> str:
    """The device a results entry trained on: the GPU's name, else the CPU model."""
    hw = meta["hardware"]
    return hw.get("device_name") or hw["cpu"]


def provenance_line(name: str, run, paper_config=None) -> str:
    """``recorded run NAME: the paper profile; S seeds, N steps, trained on X in M min, commit C``
    (``paper_config``: the paper profile's config; given, the line says whether the run is it:
    "the paper profile" or "not the paper profile")."""
    c, meta = run.config, run.meta
    same = ""
    if paper_config is not None:
        same = "the paper profile; " if c == paper_config else "not the paper profile; "
    commit = (run.provenance.get("commit") or "unknown")[:7]
    return (
        f"recorded run {name}: {same}{len(c.seeds)} seeds, {c.train.steps:,} steps, trained on "
        f"{where(meta)} in {meta['wall_time_s'] / 60:.0f} min, commit {commit}"
    )
