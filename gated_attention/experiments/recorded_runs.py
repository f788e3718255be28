"""Recorded runs: results entries too long for ``make book`` (the paper profile), shipped with
the package, unchanged, in ``gated_attention/recorded/<name>/`` with a ``provenance.json`` (the
commit of the code that wrote it, the command, anything unusual about the run).

``recorded(name)`` loads one, its config rebuilt from its meta.json. Its code hash is that of the
code that produced it, not necessarily today's, and it is never recomputed: a damaged recorded
entry is an error. ``save_recorded`` adds one from a cache entry (``python -m
gated_attention.tools.record`` does it with the provenance filled in).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from .cache import RECORDED_ROOT, RunResult, read_entry
from .registry import config_from_dict

#: where the recorded runs live (package data)


def recorded_names() -> list[str]:
    """The names of the recorded runs shipped with the package."""
    if not RECORDED_ROOT.is_dir():
        return []
    return sorted(p.name for p in RECORDED_ROOT.iterdir() if (p / "manifest.json").exists())


def recorded(name: str) -> RunResult:
    """The recorded run ``name`` (see the module docstring), its config rebuilt from its
    meta.json and its ``provenance.json`` in ``provenance``."""
    path = RECORDED_ROOT / str(name)
    if not isinstance(name, str) or not (path / "manifest.json").exists():
        known = ", ".join(recorded_names()) or "none"
        raise ValueError(f"no recorded run {name!r} in {RECORDED_ROOT}; recorded runs: {known}")
    try:
        meta, tensors = read_entry(path)
    except ValueError as err:
        raise ValueError(
            f"recorded run {path} is damaged ({err}); it cannot be recomputed here: "
            "restore it from version control"
        ) from None
    prov_file = path / "provenance.json"
    provenance = json.loads(prov_file.read_text()) if prov_file.exists() else {}
    config = config_from_dict(meta["config"])
    return RunResult(config, tensors, meta["metrics"], meta, path, True, provenance)


def save_recorded(result: RunResult, name: str, **provenance: Any) -> Path:
    """Copy the results entry of ``result`` (from ``run``) to ``RECORDED_ROOT/<name>`` with
    ``provenance`` (e.g. commit=..., command=...) as its provenance.json; returns the folder.
    An existing recorded run of that name is an error (remove it by hand to replace it)."""
    dest = RECORDED_ROOT / name
    if dest.exists():
        raise FileExistsError(f"recorded run {dest} exists; remove it first to replace it")
    read_entry(result.path)  # intact, or ValueError naming the problem
    dest.mkdir(parents=True)
    for fname in ("tensors.pt", "meta.json", "manifest.json"):
        shutil.copy2(result.path / fname, dest / fname)
    (dest / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    return dest
