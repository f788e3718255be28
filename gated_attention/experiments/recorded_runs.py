"""Recorded runs: results entries too long for ``make book``, shipped unchanged in
``gated_attention/recorded/<name>/`` with a ``provenance.json`` (the commit of the code that
wrote it, the command, anything unusual); why and which: book/reference.md. A recorded run is
never recomputed: a damaged one is an error. A chapter calls ``run_or_recorded(config)``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .cache import RECORDED_ROOT, RunResult, read_entry, run
from .registry import config_from_dict

#: set to 1 to retrain runs that ship recorded (``run_or_recorded``)
RETRAIN_ENV = "GATED_ATTENTION_RETRAIN"


def recorded_names() -> list[str]:
    """The names of the recorded runs shipped with the package."""
    if not RECORDED_ROOT.is_dir():
        return []
    return sorted(p.name for p in RECORDED_ROOT.iterdir() if (p / "manifest.json").exists())


def recorded(name: str) -> RunResult:
    """The recorded run ``name``, its config rebuilt, its ``provenance.json`` in ``provenance``."""
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


def recorded_match(config: Any) -> str | None:
    """The name of the recorded run whose config equals ``config`` (its meta.json only), or None.
    A recorded run of a config type older code wrote (no longer rebuildable) matches nothing."""
    for name in recorded_names():
        meta = json.loads((RECORDED_ROOT / name / "meta.json").read_text())
        try:
            if config_from_dict(meta["config"]) == config:
                return name
        except (ValueError, TypeError, KeyError):
            continue
    return None


def retrain_asked(env: dict | None = None) -> bool:
    """Whether ``$GATED_ATTENTION_RETRAIN`` is "1" ("0" or unset: no; another value: ValueError)."""
    value = (os.environ if env is None else env).get(RETRAIN_ENV, "0").strip()
    if value not in ("0", "1", ""):
        raise ValueError(f"${RETRAIN_ENV} must be 0 or 1, got {value!r}")
    return value == "1"


def run_or_recorded(
    config: Any, *, retrain: bool | None = None, progress: bool = True
) -> RunResult:
    """The recorded run of exactly ``config`` if one ships, else ``run(config)``.

    ``retrain``: True ignores recorded runs; None (default) reads ``$GATED_ATTENTION_RETRAIN``.
    A recorded result has ``cached`` True and its ``provenance``; a trained or cached one an
    empty ``provenance``.
    """
    if retrain is None:
        retrain = retrain_asked()
    name = None if retrain else recorded_match(config)
    return recorded(name) if name is not None else run(config, progress=progress)
