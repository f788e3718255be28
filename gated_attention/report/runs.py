"""One line per results entry, for the chapters: what a recorded run is and where it ran."""

from __future__ import annotations

__all__ = ["where", "provenance_line", "recorded_run_costs"]


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


def recorded_run_costs() -> list[tuple[str, dict, int, int, int]]:
    """(name, meta, members, steps, resumed from step) of every recorded run that trained
    networks of its own (one that continues recorded networks has no ``train`` config and is
    left out), for ``bench_table.format_run_costs``."""
    from ..experiments import recorded, recorded_names
    from .bench_table import trained_members

    costs = []
    for name in recorded_names():
        run = recorded(name)
        if not hasattr(run.config, "train"):
            continue  # continues recorded networks, trains none of its own
        members = trained_members(run.tensors)
        resumed = int(run.metrics.get("resumed_from_step", 0) or 0)
        costs.append((name, run.meta, members, run.config.train.steps, resumed))
    return costs
