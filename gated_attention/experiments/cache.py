"""The results cache: ``run(config)`` computes an experiment once and loads it afterwards.

A config is a frozen ``protocol.Experiment`` dataclass with a str ``name``; ``compute()`` gives
(tensors: a nested dict of tensors, metrics: a JSON-able dict). ``run`` = ``open_entry`` (found,
or a folder to compute in), then ``store`` (which ``runner.run_all`` calls too).

Entry: ``<cache_root()>/<name>-<hash>/`` (never inside the installed package), the hash over the
config and the source of the modules its computation imports (``code_key.closure``). It holds
tensors.pt (loaded with weights_only=True), meta.json and manifest.json (sha256 of both, written
last; each atomically). A missing or mismatched manifest is recomputed with a warning; an
interrupted run resumes in the entry's folder; an unwritable cache is a ``CacheWriteError``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import time
import tomllib
import typing
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..atomic import atomic_write
from ..engine import hardware, unstack_students
from ..models.gated_rnn import GatedRNN
from . import code_key
from .code_key import PRESENTATION_ONLY


@dataclass
class RunResult:
    """A results-cache entry: ``tensors``, ``metrics`` (from ``compute``) and ``meta``."""

    config: Any
    tensors: dict
    metrics: dict
    meta: dict
    path: Path
    cached: bool
    provenance: dict = field(default_factory=dict)  # recorded runs: provenance.json

    @property
    def params(self) -> dict[str, torch.Tensor]:
        """(E, ...) float64."""
        return self.tensors["params"]

    def students(self) -> list[GatedRNN]:
        """Each member as a float64 GatedRNN of its own size (n_e, m_e)."""
        return unstack_students(self.params, self.tensors["sizes"].tolist())


#: results entries shipped with the package (``recorded_runs``)
RECORDED_ROOT = Path(__file__).resolve().parents[1] / "recorded"


#: names the cache folder (``cache_root``)
CACHE_ENV = "GATED_ATTENTION_CACHE"

#: the folder's name in the user's cache directory (``user_cache_dir``)
USER_CACHE_NAME = "gated-attention"

_WINDOWS = os.name == "nt"


def source_checkout(package: Path | None = None) -> Path | None:
    """The repository root if ``package`` (default: this one) sits in a source checkout of
    gated-attention (its pyproject.toml beside it), else None."""
    package = Path(__file__).resolve().parents[1] if package is None else Path(package)
    pyproject = package.parent / "pyproject.toml"
    try:
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return package.parent if name == USER_CACHE_NAME else None


def user_cache_dir() -> Path:
    """The user's cache folder for this package: ``$XDG_CACHE_HOME/gated-attention`` (default
    ``~/.cache/gated-attention``; ``%LOCALAPPDATA%\\gated-attention`` on Windows)."""
    if _WINDOWS and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / USER_CACHE_NAME
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / USER_CACHE_NAME


def cache_root(package: Path | None = None) -> Path:
    """``$GATED_ATTENTION_CACHE`` if set; else ``results/`` at the root of a source checkout
    (``source_checkout(package)``); else ``user_cache_dir()``; never the installed package."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    root = source_checkout(package)
    return user_cache_dir() if root is None else root / "results"


class CacheWriteError(OSError):
    """The results cache folder cannot be created or written (the OSError is its cause)."""


@contextlib.contextmanager
def writing_cache(root: Path) -> Iterator[None]:
    """An OSError inside the block becomes a ``CacheWriteError`` naming ``root``, the reason and
    CACHE_ENV."""
    try:
        yield
    except CacheWriteError:
        raise
    except OSError as err:
        reason = err.strerror or str(err) or type(err).__name__
        where = f" ({err.filename})" if err.filename and Path(err.filename) != root else ""
        raise CacheWriteError(
            f"cannot write the results cache at {root}: {reason}{where}; set {CACHE_ENV} to a "
            "writable folder"
        ) from err


def code_hash(root: str | os.PathLike | None = None, *, config: Any = None) -> str:
    """sha256 over the source a result depends on: with ``config``, the ``code_key.closure`` of
    its class's module; without (or a class outside the package), every module but those of
    PRESENTATION_ONLY. ``root``: the package folder (default: this one)."""
    root = Path(__file__).resolve().parents[1] if root is None else Path(root)
    module = type(config).__module__ if config is not None else ""
    if module.startswith(code_key.PACKAGE + "."):
        return code_key.source_hash(code_key.closure(module, root), root)
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        if rel.startswith(PRESENTATION_ONLY):
            continue
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _config_dict(config: Any) -> dict:
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"config must be a dataclass instance, got {type(config).__name__}")
    return {"type": type(config).__qualname__, "fields": dataclasses.asdict(config)}


def config_hash(config: Any, code: str | None = None) -> str:
    """12 hex digits of sha256(config as JSON + ``code``, default ``code_hash(config=config)``)."""
    code = code_hash(config=config) if code is None else code
    text = json.dumps(_config_dict(config), sort_keys=True, default=str) + code
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def entry_path(config: Any, code: str | None = None) -> Path:
    """The cache entry of a config: ``<cache>/<name>-<config_hash(config, code)>``."""
    name = getattr(config, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{type(config).__name__} needs a non-empty str field 'name'")
    return cache_root() / f"{name}-{config_hash(config, code)}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_entry(path: Path) -> tuple[dict, dict]:
    """(meta, tensors) of the entry at ``path``, checked against its manifest; a missing,
    unreadable or altered file is a ValueError naming the problem."""
    try:
        sums = json.loads((path / "manifest.json").read_text())
        for fname, digest in sums.items():
            if _sha256(path / fname) != digest:
                raise ValueError(f"checksum of {fname} does not match the manifest")
        meta = json.loads((path / "meta.json").read_text())
        tensors = torch.load(path / "tensors.pt", weights_only=True)
        meta["metrics"]  # noqa: B018 (a meta.json without metrics is damaged)
    except (OSError, ValueError, RuntimeError, KeyError) as err:
        raise ValueError(str(err)) from err
    return meta, tensors


def _load_entry(path: Path, config: Any) -> RunResult | None:
    """The entry if complete and intact; None if absent; warns and returns None if damaged."""
    if not (path / "manifest.json").exists():
        if (path / "tensors.pt").exists() or (path / "meta.json").exists():
            msg = f"results entry {path} is partial (no manifest); recomputing"
            warnings.warn(msg, stacklevel=4)
        return None
    try:
        meta, tensors = read_entry(path)
    except ValueError as err:
        warnings.warn(f"results entry {path} is corrupt ({err}); recomputing", stacklevel=4)
        return None
    return RunResult(config, tensors, meta["metrics"], meta, path, cached=True)


def _as_tuple(value: Any) -> Any:
    """JSON lists back to the tuples of a frozen config (nested lists too)."""
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list) else value


def rebuild_config(cls: type, fields: dict) -> Any:
    """The frozen config ``cls`` from the ``fields`` a results entry stores (nested configs and
    tuples rebuilt); a field ``cls`` no longer has is a ValueError naming it."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise ValueError(f"{cls.__qualname__} has no field(s) {', '.join(unknown)}")
    kwargs = {}
    for name, value in fields.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            value = rebuild_config(hint, value)
        elif typing.get_origin(hint) is tuple:
            item = typing.get_args(hint)[:1]
            if item and dataclasses.is_dataclass(item[0]):  # tuple[Config, ...]
                value = tuple(rebuild_config(item[0], v) for v in value)
            else:
                value = _as_tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


def refuse_nonfinite_params(tensors: dict, path: Path) -> None:
    """Refuse to store an entry whose trained network holds NaN or inf: a ValueError naming the
    parameter and members, the tensors kept beside the entry as ``refused-tensors.pt``.

    Checks only ``tensors["params"]`` as ``RunResult.params`` reads it (a dict of (E, ...)
    tensors): other tensors, and per-group params (a rate sweep's), may hold NaN on purpose.
    """
    params = tensors.get("params") if isinstance(tensors, dict) else None
    if not isinstance(params, dict) or not params:
        return
    if not all(isinstance(v, torch.Tensor) and v.dim() >= 1 for v in params.values()):
        return
    bad = {
        k: (~torch.isfinite(v).flatten(1).all(dim=1)).nonzero().flatten().tolist()
        for k, v in params.items()
        if v.is_floating_point() and v.dim() >= 2
    }
    bad = {k: members for k, members in bad.items() if members}
    if not bad:
        return
    kept = path / "refused-tensors.pt"
    atomic_write(kept, lambda p: torch.save(tensors, p))
    names = ", ".join(f"params[{k!r}] of member(s) {members}" for k, members in bad.items())
    raise ValueError(
        f"refusing to store results entry {path}: {names} hold NaN or inf (a diverged "
        f"network); the computed tensors are kept in {kept}"
    )


def open_entry(config: Any) -> tuple[str, Path, RunResult | None]:
    """(code hash, entry folder, the entry if complete and intact, else None and the folder
    ready to compute in) of ``config``."""
    code = code_hash(config=config)  # what it runs, taken now: the source may change meanwhile
    path = entry_path(config, code)
    found = _load_entry(path, config)
    if found is None:
        with writing_cache(path.parent):
            path.mkdir(parents=True, exist_ok=True)
            for stale in ("manifest.json", "meta.json", "tensors.pt"):
                (path / stale).unlink(missing_ok=True)
    return code, path, found


def store(
    config: Any,
    path: Path,
    code: str,
    tensors: dict,
    metrics: dict,
    wall_time_s: float,
    extra: dict | None = None,
) -> RunResult:
    """Write the entry of ``config`` into ``path`` (``open_entry``'s), manifest.json last;
    ``extra``: fields added to or replacing those of meta.json."""
    from .._version import __version__

    refuse_nonfinite_params(tensors, path)
    meta = {
        "name": config.name,
        "config": _config_dict(config),
        "package_version": __version__,
        "code_hash": code,
        "torch_version": torch.__version__,
        "hardware": hardware(),
        "wall_time_s": wall_time_s,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "metrics": metrics,
        **(extra or {}),
    }
    meta_text = json.dumps(meta, indent=1, default=str)
    with writing_cache(path.parent):
        atomic_write(path / "tensors.pt", lambda p: torch.save(tensors, p))
        atomic_write(path / "meta.json", lambda p: p.write_text(meta_text))
        sums = {f: _sha256(path / f) for f in ("tensors.pt", "meta.json")}
        atomic_write(path / "manifest.json", lambda p: p.write_text(json.dumps(sums, indent=1)))
        (path / "checkpoint.pt").unlink(missing_ok=True)
    return RunResult(config, tensors, metrics, meta, path, cached=False)


def run(config: Any, *, progress: bool = True) -> RunResult:
    """The cached results of ``config``, computed and stored if needed."""
    code, path, found = open_entry(config)
    if found is not None:
        return found
    checkpoint = path / "checkpoint.pt"  # train() discards it, with a warning, if unreadable
    t0 = time.perf_counter()
    tensors, metrics = config.compute(checkpoint=checkpoint, progress=progress)
    return store(config, path, code, tensors, metrics, time.perf_counter() - t0)
