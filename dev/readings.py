"""Ship the chapters' readings of recorded runs beside them: every derived value of
``readings.recall_scores.RECORDED_READINGS`` (App. D.3's fits, minutes each) computed once and
copied into ``gated_attention/recorded/<run>/derived-<label>-<key>.json``, where a fresh clone
reads it instead of computing it (``readings.derived``). A repository tool: it writes into the
checkout.

    python -m dev.readings     ship each reading whose shipped file is not today's key

Compute from an empty cache (``GATED_ATTENTION_CACHE=$(mktemp -d)``): the checkout's
``results/derived`` may hold a value computed while the code was being edited. The fits run on
one torch thread, as the shipped ones did: another count rounds their last digits differently.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import torch

from gated_attention.readings import recall_scores
from gated_attention.readings.derived import (
    RECORDED_ROOT,
    cached_path,
    derived_key,
    read,
    shipped_path,
)

__all__ = ["ship", "ship_readings", "main"]


def ship(run: str, label: str, args: Any, modules: list[str]) -> Path:
    """Copy the cached derived value beside the recorded run (replacing older keys of the same
    label); returns the shipped file. Its value must have been computed (``derived``) first."""
    key = derived_key(run, label, args, modules)
    source = cached_path(run, label, key)
    found, _ = read(source)
    if not found:
        raise FileNotFoundError(f"no cached value {source}: compute it with derived() first")
    for old in (RECORDED_ROOT / run).glob(f"derived-{label}-*.json"):
        old.unlink()
    dest = shipped_path(run, label, key)
    shutil.copyfile(source, dest)
    return dest


def ship_readings() -> list[tuple[Path, bool]]:
    """Ship every reading of RECORDED_READINGS not yet shipped under today's key beside its run;
    returns (file, shipped now) per reading."""
    out = []
    modules = [recall_scores.__name__]
    for name, values in recall_scores.RECORDED_READINGS:
        _, label, args = recall_scores.reading_key(values)
        path = shipped_path(name, label, derived_key(name, label, args, modules))
        if path.exists():
            out.append((path, False))
            continue
        recall_scores.recorded_reading(name, values)
        out.append((ship(name, label, args, modules), True))
    return out


def main() -> int:
    torch.set_num_threads(1)
    for path, now in ship_readings():
        where = path.relative_to(RECORDED_ROOT.parent)
        print(f"shipped {where}" if now else f"current {where} (already shipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
