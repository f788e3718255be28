"""environment.yml (Binder, conda) installs the same pinned set as pyproject.toml."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
#: packages environment.yml may add for Binder's user interface only
BINDER_ONLY = {"jupyterlab"}


def _pins(specs):
    pins = {}
    for spec in specs:
        spec = spec.split("#")[0].strip()
        if spec.startswith("--"):  # a pip option (the CPU index of environment.yml), not a package
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", spec)
        assert m, f"not an exact pin: {spec!r}"
        pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def _pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs += extra
    return _pins(specs)


def _environment_pins():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    return _pins(pip)


def test_every_dependency_is_pinned_exactly():
    pins = _pyproject_pins()
    assert pins["torch"] == "2.13.0"  # a range could pull a multi-GB CUDA build
    assert pins["jupyter-book"].startswith("1.")  # 2.x has another layout


def test_environment_yml_agrees_with_pyproject():
    py, env = _pyproject_pins(), _environment_pins()
    assert {k: env.get(k) for k in py} == py
    assert set(env) - set(py) <= BINDER_ONLY


def test_binder_uses_the_same_environment():
    binder_env = ROOT / ".binder" / "environment.yml"
    assert binder_env.resolve() == (ROOT / "environment.yml").resolve()
