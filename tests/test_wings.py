"""The wings of the package import only downward (the book's Reference page, "Architecture").

Every module of ``gated_attention`` is parsed with ``ast``: every import statement counts, those
inside functions and ``if TYPE_CHECKING`` blocks too. A module's wing is its sub-package, or,
for a module at the top of the package, its own name. A wing may import its own modules and the
wings of lower tiers, never a wing of its own tier or above. The top-level modules in TOP
(the package's ``__init__``, ``__main__``, ``workbench``) sit above every wing and may import
any of them; no wing imports them (``from .. import __version__`` included: the version lives in
``_version``, at the bottom).
"""

from __future__ import annotations

import ast
from pathlib import Path

import gated_attention

PACKAGE = "gated_attention"
ROOT = Path(gated_attention.__file__).resolve().parent

#: the tiers, lowest first: a wing imports only wings of lower tiers
WING_ORDER: tuple[tuple[str, ...], ...] = (
    ("atomic", "_version"),  # top-level helper modules, import nothing of the package
    ("models",),
    ("constructions",),  # App. A and B: weights for the models
    ("tasks",),  # tasks.regression builds its GD network with constructions.gated_rnn
    ("engine",),
    ("analysis",),
    ("experiments",),
    ("readings",),  # runs turned into typed rows, one module per claim
    ("report",),
    ("tools", "sweep"),
)
#: top-level modules above every wing ("__init__" is the package itself)
TOP = ("__init__", "__main__", "workbench")

TIER = {wing: i for i, tier in enumerate(WING_ORDER) for wing in tier}
TIER.update({top: len(WING_ORDER) for top in TOP})


def _module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _exists(module: str, root: Path = ROOT) -> bool:
    base = root.parent.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _wing(module: str) -> str:
    """'gated_attention.analysis.pruning' -> 'analysis'; 'gated_attention' -> '__init__'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, absolute module) of every package import in the file, nested ones included.

    ``from X import name`` counts as an import of ``X.name`` when that is a module of the
    package, else of ``X`` (so ``from .. import __version__`` imports the package itself)."""
    module = _module_name(path, root)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for a in node.names:
                sub = f"{source}.{a.name}"
                found.append((node.lineno, sub if _exists(sub, root) else source))
    ours = [(line, m) for line, m in found if m == PACKAGE or m.startswith(PACKAGE + ".")]
    return list(dict.fromkeys(ours))  # one entry per line and module


def modules() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def back_arrows() -> list[str]:
    """'module:line imports target (wing a, tier i -> wing b, tier j)' for each import of a wing
    that is not below the importer's."""
    bad = []
    for path in modules():
        module = _module_name(path)
        wing = _wing(module)
        for line, target in imports(path):
            other = _wing(target)
            if other == wing or wing not in TIER or other not in TIER:
                continue  # its own wing; an unplaced wing fails the test below
            if TIER[other] >= TIER[wing] and wing not in TOP:
                bad.append(
                    f"{module}:{line} imports {target} "
                    f"({wing}, tier {TIER[wing]} -> {other}, tier {TIER[other]})"
                )
    return bad


def test_every_wing_imports_only_wings_below_it():
    bad = back_arrows()
    assert not bad, "imports against the wing order:\n" + "\n".join(bad)


def test_the_order_places_every_wing():
    """A new sub-package or top-level module must be given its tier."""
    wings = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    wings |= {p.stem for p in ROOT.glob("*.py")}
    missing = sorted(wings - set(TIER))
    assert not missing, f"not in WING_ORDER or TOP: {missing}"
    assert not set(TIER) - wings, f"placed but absent: {sorted(set(TIER) - wings)}"


def test_the_parser_sees_nested_and_relative_imports(tmp_path):
    """A lazy import in a function and one under TYPE_CHECKING are found and resolved."""
    pkg = tmp_path / PACKAGE
    (pkg / "analysis").mkdir(parents=True)
    (pkg / "experiments").mkdir()
    for p in (pkg, pkg / "analysis", pkg / "experiments"):
        (p / "__init__.py").write_text("")
    (pkg / "experiments" / "cache.py").write_text("")
    src = pkg / "analysis" / "reader.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ..experiments import cache\n"
        "def f():\n"
        "    from .. import __version__\n"
        "    import gated_attention.experiments\n"
    )
    assert imports(src, pkg) == [
        (3, "gated_attention.experiments.cache"),
        (5, "gated_attention"),
        (6, "gated_attention.experiments"),
    ]


def test_every_wing_docstring_names_its_modules():
    """Each wing's ``__init__`` docstring names every module of the wing (as a word), so that a
    reader who opens the wing finds all of it listed; a module added without a line fails."""
    import re

    for wing in sorted({w for tier in WING_ORDER[1:] for w in tier}):
        doc = ast.get_docstring(ast.parse((ROOT / wing / "__init__.py").read_text())) or ""
        for path in sorted((ROOT / wing).glob("*.py")):
            name = path.stem
            if name in ("__init__", "__main__"):
                continue
            assert re.search(rf"(?<![\w.]){name}(?![\w])", doc), f"{wing}/__init__ omits {name}"


def test_the_readme_wings_table_names_every_module():
    """The wings table of the book's Reference page ("| `wing/` | what | modules |") names every
    module of every wing, in backticks, in that wing's row: a module added without its line
    there fails."""
    import re

    readme = (ROOT.parent / "book" / "reference.md").read_text()
    for wing in sorted({w for tier in WING_ORDER[1:] for w in tier}):
        rows = [line for line in readme.splitlines() if line.startswith(f"| `{wing}/` |")]
        assert len(rows) == 1, f"the Reference page's wings table has no single row for {wing}/"
        named = set(re.findall(r"`(\w+)`", rows[0]))
        modules = {p.stem for p in (ROOT / wing).glob("*.py")} - {"__init__", "__main__"}
        missing = sorted(modules - named)
        assert not missing, f"the Reference page's row for {wing}/ omits {missing}"


def private_imports(root: Path = ROOT) -> list[str]:
    """'module:line imports _name from other' for each ``from X import _name`` in the package
    whose X is a module of the package (a private name used outside the module defining it)."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = package[: len(package) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            if source != PACKAGE and not source.startswith(PACKAGE + "."):
                continue
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    bad.append(f"{module}:{node.lineno} imports {a.name} from {source}")
    return bad


def test_no_module_imports_a_private_name_of_another():
    assert private_imports() == []


def toy_package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``gated_attention`` under ``tmp_path`` with a ``models`` wing and ``files``
    (path under the package -> source)."""
    pkg = tmp_path / PACKAGE
    (pkg / "models").mkdir(parents=True)
    for name, source in {"__init__.py": "", "models/__init__.py": "", **files}.items():
        (pkg / name).write_text(source)
    return pkg


def test_the_private_import_check_sees_one(tmp_path):
    pkg = toy_package(
        tmp_path,
        {
            "models/a.py": "def _helper():\n    return 1\n",
            "models/b.py": "from .a import _helper\nfrom . import __name__\n",
        },
    )
    assert private_imports(pkg) == [
        "gated_attention.models.b:1 imports _helper from gated_attention.models.a"
    ]


def needless_all(root: Path = ROOT) -> list[str]:
    """Modules whose ``__all__`` lists only names they define themselves: there it restates the
    underscore convention; ``__all__`` is for a module that hands on names it imports."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        listed, defined = None, set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                if "__all__" in names and isinstance(node.value, (ast.List, ast.Tuple)):
                    listed = {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
                defined |= names - {"__all__"}
        if listed is not None and listed <= defined:
            bad.append(_module_name(path, root))
    return bad


def test_all_is_only_where_a_module_hands_on_imported_names():
    assert needless_all() == []


def test_the_all_check_sees_a_needless_one(tmp_path):
    pkg = toy_package(
        tmp_path,
        {
            "__init__.py": "from .models.a import f\n\n__all__ = ['f']\n",
            "models/a.py": "__all__ = ['f', 'G']\n\n\ndef f():\n    pass\n\n\nG = 1\n",
        },
    )
    assert needless_all(pkg) == ["gated_attention.models.a"]
