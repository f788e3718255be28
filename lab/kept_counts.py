"""A plan's step counts kept between calls: ``gpu_plan`` counts each step once per code.

Counting a step (``device_time``: its kernels, its FLOPs, the seconds its first run compiles)
trains it a few steps on this CPU, compiling it where its mode compiles (a minute or more for an
LSTM or a GRU unrolled over T), so every `make bench` spent most of its time counting the same
steps again. ``kept_counts(path)`` keeps them in one JSON file (`make bench`:
``_build/step-counts.json``) under the key of all they depend on:

    "source"   sha256 of the modules the counted runs execute (the import closure of the
               experiments' registry: configs, engine, models, tasks) and of the counting code
               (``device_time``, ``own_sizes``)
    "torch"    torch's version (another torch dispatches and compiles other kernels)
    "cpu"      this processor's model and cores (``engine.hardware``: ``compile_s`` is
               measured here)

A file under another key is counted afresh and replaced; a file that cannot be read is named in
a warning and counted afresh; what a call counted is kept even when it stops early.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from gated_attention.atomic import atomic_write_json
from gated_attention.engine import hardware
from gated_attention.experiments.code_key import closure, source_hash

__all__ = [
    "DEFAULT_PATH",
    "counted_modules",
    "counts_key",
    "read_counts",
    "write_counts",
    "kept_counts",
]

DEFAULT_PATH = Path("_build") / "step-counts.json"
#: the counting code (in the lab), beside the closure of what the counted runs execute
COUNTING = tuple(Path(__file__).with_name(f) for f in ("device_time.py", "own_sizes.py"))


def counted_modules() -> list[str]:
    """The package modules whose source enters the key: what the counted runs execute (the
    counting code, ``COUNTING``, enters it beside them)."""
    return sorted(closure("gated_attention.experiments.registry"))


def counts_key() -> dict:
    """What the counts depend on (module docstring)."""
    modules = counted_modules()
    hw = hardware("cpu")  # the processor's model, as results record it
    cpu = f"{hw['cpu']} ({hw['machine']}, {hw['cpu_count']} cores)"
    source = hashlib.sha256(source_hash(modules).encode())
    for path in COUNTING:
        source.update(path.read_bytes())
    return {"source": source.hexdigest(), "torch": torch.__version__, "cpu": cpu}


def read_counts(path: str | os.PathLike, key: dict | None = None) -> dict:
    """The counts kept at ``path`` under ``key`` (None: ``counts_key()``), as ``gpu_plan``
    holds them (tuple keys); {} where there is no file or it was kept under another key; a
    file that cannot be read gives a warning naming it and {}."""
    path, key = Path(path), counts_key() if key is None else key
    if not path.is_file():
        return {}
    try:
        kept = json.loads(path.read_text())
        if kept.get("key") != key:
            return {}
        return {ast.literal_eval(k): v for k, v in kept["counts"].items()}
    except (ValueError, SyntaxError, TypeError, KeyError, AttributeError) as err:
        warnings.warn(
            f"{path}: the kept step counts cannot be read ({type(err).__name__}: {err}); "
            "every step is counted afresh and the file replaced",
            RuntimeWarning,
            stacklevel=2,
        )
        return {}


def write_counts(path: str | os.PathLike, counted: dict, key: dict | None = None) -> None:
    """Keep ``counted`` (``gpu_plan``'s tuple-keyed counts) at ``path`` under ``key``: each
    count whose key reads back as itself (a key holding an object that does not is left out,
    to be counted again next call)."""
    key = counts_key() if key is None else key
    counts = {repr(k): v for k, v in counted.items() if _reads_back(k)}
    atomic_write_json(path, {"key": key, "counts": counts}, indent=1, sort_keys=True)


def _reads_back(k: object) -> bool:
    try:
        return ast.literal_eval(repr(k)) == k
    except (ValueError, SyntaxError):
        return False


@contextmanager
def kept_counts(
    path: str | os.PathLike | None = DEFAULT_PATH, *, fresh: bool = False
) -> Iterator[dict]:
    """The counts kept at ``path`` (``fresh``: none, every step counted again), to fill in;
    written back on leaving, also on an error or an interrupt (what was counted is kept).
    ``path`` None: nothing kept, an empty dict."""
    if path is None:
        yield {}
        return
    key = counts_key()
    counted = {} if fresh else read_counts(path, key)
    try:
        yield counted
    finally:
        write_counts(path, counted, key)
