"""How each chapter of this build was executed: profile, wall time, status and versions.

``tools.book`` records each chapter right after running it (``record_chapter``) into
``<build>/execution/<profile>.json`` (``<build>``: ``scorecard.build_dir``)::

    {"profile": "quick",
     "chapters": {"construction": {"status": "ok", "wall_s": 6.5,
                                   "finished": "2026-11-30T13:15:02+00:00",
                                   "python": "3.11.7", "torch": "2.13.0+cpu", "numpy": "2.4.6",
                                   "gated_attention": "0.1.0", "device": "cpu"}, ...}}

Chapters keep the order they were first recorded in; the versions are the executor's, which is
also the chapters' kernel. Without that file, ``<build>/execution-times-<profile>.json``
(``{chapter: seconds}``) is read, its versions unknown. ``show``: book/execution_status.md.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path

from ..atomic import atomic_write_json
from . import table
from .scorecard import build_dir

UNKNOWN = "?"
VERSION_KEYS = ("python", "torch", "numpy")


def _record_path(profile: str, build: Path | None = None) -> Path:
    return (build or build_dir()) / "execution" / f"{profile}.json"


def versions() -> dict[str, str]:
    """Python, torch, numpy and gated_attention versions of this interpreter, and the device."""
    import numpy
    import torch

    from .._version import __version__

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "gated_attention": __version__,
        "device": os.environ.get("GATED_ATTENTION_DEVICE", "cpu"),
    }


def record_chapter(
    chapter: str, profile: str, wall_s: float | None, status: str = "ok", build: Path | None = None
) -> Path:
    """Add (or replace) one chapter's row of ``<build>/execution/<profile>.json``; its path."""
    path = _record_path(profile, build)
    data = json.loads(path.read_text()) if path.exists() else {"profile": profile, "chapters": {}}
    data["chapters"][chapter] = {
        "status": status,
        "wall_s": None if wall_s is None else round(float(wall_s), 1),
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **versions(),
    }
    atomic_write_json(path, data, indent=2)
    return path


def _legacy_rows(profile: str, build: Path) -> list[dict]:
    path = build / f"execution-times-{profile}.json"
    if not path.exists():
        return []
    times = json.loads(path.read_text())
    unknown = dict.fromkeys(VERSION_KEYS, UNKNOWN)
    return [
        {"chapter": c, "profile": profile, "status": "ok", "wall_s": s, **unknown}
        for c, s in times.items()
    ]


def read_status(
    profile: str, build: Path | None = None, order: list[str] | None = None
) -> list[dict]:
    """One row per executed chapter of ``profile`` (``order``: chapter names to sort by)."""
    build = build or build_dir()
    path = _record_path(profile, build)
    if path.exists():
        chapters = json.loads(path.read_text())["chapters"]
        rows = [{"chapter": c, "profile": profile, **row} for c, row in chapters.items()]
    else:
        rows = _legacy_rows(profile, build)
    if order:
        rank = {c: i for i, c in enumerate(order)}
        rows.sort(key=lambda r: rank.get(r["chapter"], len(rank)))
    return rows


def _seconds(value) -> str:
    if value is None:
        return UNKNOWN
    minutes, seconds = divmod(float(value), 60)
    return f"{int(minutes)} min {seconds:04.1f} s" if minutes else f"{seconds:.1f} s"


def to_markdown(rows: list[dict]) -> str:
    """A markdown table (``table.markdown``): chapter, profile, wall time, python, torch, numpy
    (and status when a chapter failed), with a total line."""
    with_status = any(r.get("status", "ok") != "ok" for r in rows)
    lines = []
    for r in rows:
        line = {"chapter": f"`{r['chapter']}`", "profile": r["profile"]}
        line["wall time"] = _seconds(r.get("wall_s"))
        line |= {k: str(r.get(k, UNKNOWN)) for k in VERSION_KEYS}
        if with_status:
            line["status"] = "ok" if r.get("status") == "ok" else f"**{r.get('status')}**"
        lines.append(line)
    total = sum(r["wall_s"] for r in rows if r.get("wall_s") is not None)
    lines.append(
        dict.fromkeys(lines[0], "") | {"chapter": "**total**", "wall time": _seconds(total)}
    )
    return table.markdown(lines)


def show(profile: str, order: list[str] | None = None, build: Path | None = None):
    """Display the table of ``profile`` in a notebook (returns the IPython Markdown object)."""
    from IPython.display import Markdown, display

    rows = read_status(profile, build, order)
    if not rows:
        text = f"No chapter of profile `{profile}` has been executed in this build yet."
    else:
        text = to_markdown(rows)
    md = Markdown(text)
    display(md)
    return md
