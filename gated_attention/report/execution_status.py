"""How each chapter of this build was executed: profile, wall time, status and versions; and the
book's chapters (``chapters``, from ``_toc.yml``).

The book's executor (book/_ext/executor.py) records each chapter right after running it into
``<build>/execution/<profile>.json`` (``record_path``; ``<build>``: ``scorecard.build_dir``)::

    {"profile": "quick",
     "chapters": {"construction": {"status": "ok", "wall_s": 6.5,
                                   "finished": "2026-11-30T13:15:02+00:00",
                                   "python": "3.11.7", "torch": "2.13.0+cpu", "numpy": "2.4.6",
                                   "gated_attention": "0.1.0", "device": "cpu"}, ...}}

Chapters keep the order they were first recorded in; the versions are the executor's, which is
also the chapters' kernel. ``show``: book/execution_status.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import table
from .scorecard import build_dir

UNKNOWN = "?"
VERSION_KEYS = ("python", "torch", "numpy")

#: the checkout's root: the book's ``_toc.yml`` and chapters ``book/*.md``
ROOT = Path(__file__).resolve().parents[2]


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapter sources named by ``_toc.yml``, in reading order."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("chapters"))
    walk(toc.get("parts"))  # a part is an entry with chapters
    paths = [root / f"{f}.md" for f in files]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"_toc.yml names chapters that do not exist: {', '.join(missing)}")
    return paths


def record_path(profile: str, build: Path | None = None) -> Path:
    """The execution record of ``profile`` in ``build`` (default ``scorecard.build_dir()``)."""
    return (build or build_dir()) / "execution" / f"{profile}.json"


def read_status(
    profile: str, build: Path | None = None, order: list[str] | None = None
) -> list[dict]:
    """One row per executed chapter of ``profile`` (``order``: chapter names to sort by)."""
    path = record_path(profile, build)
    if not path.exists():
        return []
    chapters = json.loads(path.read_text())["chapters"]
    rows = [{"chapter": c, "profile": profile, **row} for c, row in chapters.items()]
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


def show(profile: str):
    """Display the table of ``profile`` in a notebook, in the book's order (``chapters``); returns
    the IPython Markdown object."""
    from IPython.display import Markdown, display

    rows = read_status(profile, order=[path.stem for path in chapters()])
    empty = f"No chapter of profile `{profile}` has been executed in this build yet."
    md = Markdown(to_markdown(rows) if rows else empty)
    display(md)
    return md
