"""Atomic writes: the one helper every file the package writes goes through (results entries,
checkpoints, recorded runs, the scorecard, the bench). A reader never sees a half-written file:
the content goes to a temporary file beside the target, which then replaces it in one rename."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def atomic_write(path: str | os.PathLike, write: Callable[[Path], Any]) -> None:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then rename it onto ``path``; if
    ``write`` fails, the temporary file is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_json(path: str | os.PathLike, obj: Any, **dumps: Any) -> None:
    """``atomic_write`` of ``json.dumps(obj, **dumps)`` followed by a newline."""
    text = json.dumps(obj, **dumps) + "\n"
    atomic_write(path, lambda p: p.write_text(text))
