"""The lab (lab/) and the lint hooks (dev/) stay out of the installed package and run from
the repository."""

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
    assert not [p for p in packages if p.split(".")[0] in ("lab", "dev")]


def test_the_package_imports_nothing_from_the_lab_or_dev():
    hits = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "gated_attention").rglob("*.py")
        for folder in ("lab", "dev")
        if f"from {folder}" in p.read_text() or f"import {folder}" in p.read_text()
    ]
    assert not hits, f"the package imports the lab or dev/: {hits}"


def test_a_lab_tool_runs_from_the_repository():
    out = subprocess.run(
        [sys.executable, "-m", "lab.gpu_plan", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "usage" in out.stdout.lower()


def test_the_thread_measurement_times_fits_in_their_own_processes(monkeypatch):
    from lab import threads

    assert threads.fit_seconds(8, 20, 1) > 0  # the README's fit, 20 steps, one thread
    seen = []
    monkeypatch.setattr(threads, "fit_seconds", lambda n, steps, t: seen.append((n, t)) or 1.0)
    rows = threads.measure(sizes=(8,), steps=20, repeats=1)
    assert [r["machine"] for r in rows] == ["quiet", "other cores busy"]
    assert rows[0] == {"n": 8, "machine": "quiet", "1 thread, s": 1.0, "2 threads, s": 1.0}
    assert seen == [(8, 1), (8, 2)] * 2
