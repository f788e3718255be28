"""The lab (lab/) stays out of the installed package and runs from the repository."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]


def test_pip_install_installs_no_lab_module():
    """The packages ``pip install .`` would install, found as setuptools finds them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = find_packages(where=str(ROOT), include=include)
    assert "gated_attention" in packages
    assert not [p for p in packages if p == "lab" or p.startswith("lab.")]


def test_the_package_imports_nothing_from_the_lab():
    hits = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "gated_attention").rglob("*.py")
        if "from lab" in p.read_text() or "import lab" in p.read_text()
    ]
    assert not hits, f"the package imports the lab: {hits}"


def test_a_lab_tool_runs_from_the_repository():
    out = subprocess.run(
        [sys.executable, "-m", "lab.gpu_plan", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "usage" in out.stdout.lower()
