"""Analyses of a recorded run computed once (App. D.3's fits: minutes) and kept as JSON:
``derived(run, label, args, compute, modules)``. Its key (12 hex digits) is the sha256 of the
run's manifest, label, args and the source of ``modules`` and every package module they import:
changed code is a new key, so a stale value is never read. Read from ``<recorded
run>/derived-<label>-<key>.json`` (``ship``), else ``<cache>/derived/<run>-<label>-<key>.json``,
else computed and cached; a file whose checksum fails is reported and recomputed.
``python -m dev.readings`` (the repository's) ships every derived value the chapters use."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..atomic import atomic_write_json
from ..experiments import code_key
from ..experiments.cache import cache_root
from ..experiments.recorded_runs import RECORDED_ROOT, recorded_names


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _code(modules: list[str]) -> str:
    """sha256 over ``modules`` and every package module they import, directly or not."""
    if not modules:
        raise ValueError("derived: name at least one module that computes the value")
    todo, found = list(modules), set()
    while todo:
        m = todo.pop()
        if m not in found:
            found.add(m)
            todo.extend(code_key.imports_of(m) - found)
    return code_key.source_hash(sorted(found))


def derived_key(run: str, label: str, args: Any, modules: list[str]) -> str:
    """12 hex digits of sha256(the run's manifest, label, args, the computing code)."""
    if run not in recorded_names():
        raise ValueError(f"derived: no recorded run {run!r}; recorded runs: {recorded_names()}")
    manifest = (RECORDED_ROOT / run / "manifest.json").read_bytes()
    text = _canonical({"label": label, "args": args}) + _code(modules)
    return hashlib.sha256(manifest + text.encode()).hexdigest()[:12]


def shipped_path(run: str, label: str, key: str) -> Path:
    """Where a derived value ships: beside the recorded run."""
    return RECORDED_ROOT / run / f"derived-{label}-{key}.json"


def cached_path(run: str, label: str, key: str) -> Path:
    """Where a derived value is cached: ``<cache>/derived/``."""
    return cache_root() / "derived" / f"{run}-{label}-{key}.json"


def read(path: Path) -> tuple[bool, Any]:
    """(found, value) of a derived file; a damaged one is reported and counts as absent."""
    if not path.exists():
        return False, None
    try:
        stored = json.loads(path.read_text())
        text = _canonical(stored["value"])
        if hashlib.sha256(text.encode()).hexdigest() != stored["sha256"]:
            raise ValueError("the checksum of its value does not match")
    except (OSError, ValueError, KeyError, TypeError) as err:
        warnings.warn(f"derived value {path} is damaged ({err}); recomputing", stacklevel=3)
        return False, None
    return True, stored["value"]


def derived(run: str, label: str, args: Any, compute: Callable[[], Any], modules: list[str]) -> Any:
    """``compute()`` of recorded run ``run``, computed once; ``args``: what else it depends on
    (JSON-able); ``modules``: the dotted modules that compute it. The value comes back as JSON
    gives it: tuples as lists, dict keys as strings."""
    key = derived_key(run, label, args, modules)
    for path in (shipped_path(run, label, key), cached_path(run, label, key)):
        found, value = read(path)
        if found:
            return value
    value = json.loads(_canonical(compute()))
    digest = hashlib.sha256(_canonical(value).encode()).hexdigest()
    stored = {"run": run, "label": label, "args": args, "key": key, "value": value}
    atomic_write_json(cached_path(run, label, key), {**stored, "sha256": digest})
    return value
