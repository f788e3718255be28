"""Which source code a result depends on: the import closure of an experiment's config, found
from the imports, not from a list kept by hand.

    imports_of(module)  the package modules one module imports, lazy imports inside functions
                        too; a name imported from a package (``from ..engine import train``)
                        resolves through its ``__init__`` to the module that defines it, so one
                        family's file does not enter every key
    closure, source_hash  the import closure of a module and the sha256 of its modules' source

Modules under PRESENTATION_ONLY (they draw and print) never enter a closure.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

PACKAGE = "gated_attention"
#: folders of the package whose source never changes a result
PRESENTATION_ONLY = ("tools/", "report/")


def _root() -> Path:
    return Path(__file__).resolve().parents[1]


def _path(module: str, root: Path) -> Path | None:
    """The file of a package module ('gated_attention.engine' -> engine/__init__.py)."""
    if module != PACKAGE and not module.startswith(PACKAGE + "."):
        return None
    rel = module.split(".")[1:]
    base = root.joinpath(*rel)
    if base.with_suffix(".py").is_file() and rel:
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _is_package(module: str, root: Path) -> bool:
    p = _path(module, root)
    return p is not None and p.name == "__init__.py"


def _absolute(module: str, level: int, target: str | None, root: Path) -> str:
    """The absolute name of ``from <level dots><target> import ...`` inside ``module``."""
    if level == 0:
        return target or ""
    parts = module.split(".")
    package = parts if _is_package(module, root) else parts[:-1]
    if level - 1 > len(package) - 1:
        raise ImportError(f"relative import beyond the package in {module}")
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _parse(path: Path) -> ast.Module:
    return _parse_text(path.read_text(), str(path))


@functools.lru_cache(maxsize=256)
def _parse_text(text: str, filename: str) -> ast.Module:  # keyed on the source: never stale
    return ast.parse(text, filename=filename)


def _resolve_name(package: str, name: str, root: Path, seen: frozenset = frozenset()) -> str:
    """The module that defines ``name`` as seen from ``package`` (through its ``__init__``)."""
    sub = f"{package}.{name}"
    if _path(sub, root) is not None:
        return sub
    if not _is_package(package, root) or package in seen:
        return package
    for node in _parse(_path(package, root)).body:
        if isinstance(node, ast.ImportFrom) and any(
            (a.asname or a.name) == name for a in node.names
        ):
            source = _absolute(package, node.level, node.module, root)
            original = next(a.name for a in node.names if (a.asname or a.name) == name)
            if _path(source, root) is None:
                return package  # re-exported from outside the package
            if _is_package(source, root):
                return _resolve_name(source, original, root, seen | {package})
            return source
    return package


def imports_of(module: str, root: Path | None = None) -> set[str]:
    """The package modules ``module`` imports (see the module docstring)."""
    root = _root() if root is None else Path(root)
    path = _path(module, root)
    if path is None:
        raise ValueError(f"{module!r} is not a module of the {PACKAGE} package in {root}")
    found: set[str] = set()
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if _path(a.name, root) is not None)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node.level, node.module, root)
            if _is_package(base, root):
                found.update(_resolve_name(base, a.name, root) for a in node.names)
            elif _path(base, root) is not None:
                found.add(base)
    return found


def closure(module: str, root: Path | None = None) -> list[str]:
    """Every package module reachable from ``module``, itself included, sorted."""
    root = _root() if root is None else Path(root)
    todo, seen = [module], set()
    while todo:
        m = todo.pop()
        if m in seen or _path(m, root).relative_to(root).as_posix().startswith(PRESENTATION_ONLY):
            continue
        seen.add(m)
        todo.extend(imports_of(m, root) - seen)
    return sorted(seen)


def source_hash(modules: list[str], root: Path | None = None) -> str:
    """sha256 over the path (relative to the package) and source of each module."""
    root = _root() if root is None else Path(root)
    h = hashlib.sha256()
    for m in sorted(modules):
        f = _path(m, root)
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()
