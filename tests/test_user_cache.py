"""Where the results cache lives (``experiments.cache.cache_root``): $GATED_ATTENTION_CACHE,
else ``results/`` of a source checkout, else the user's cache folder; never inside the package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gated_attention.experiments import cache


@pytest.fixture
def env(tmp_path, monkeypatch):
    """No cache variable, a home of its own, no XDG_CACHE_HOME."""
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(cache, "_WINDOWS", False)
    return monkeypatch


def fake_package(parent: Path, pyproject: str | None) -> Path:
    package = parent / "gated_attention"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    if pyproject is not None:
        (parent / "pyproject.toml").write_text(pyproject)
    return package


OURS = '[project]\nname = "gated-attention"\nversion = "0.1.0"\n'


def outside(folder: Path, package: Path) -> bool:
    return not folder.resolve().is_relative_to(package.resolve())


def test_installed_package_uses_the_user_cache(env, tmp_path):
    package = fake_package(tmp_path / "venv" / "lib" / "python3.11" / "site-packages", None)
    root = cache.cache_root(package)
    assert root == tmp_path / "home" / ".cache" / "gated-attention"
    assert outside(root, package)


def test_xdg_cache_home_is_honoured(env, tmp_path):
    package = fake_package(tmp_path / "site-packages", None)
    env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root(package) == tmp_path / "xdg" / "gated-attention"
    env.setenv("XDG_CACHE_HOME", "relative/path")  # the XDG spec: ignore a relative one
    assert cache.cache_root(package) == tmp_path / "home" / ".cache" / "gated-attention"


def test_windows_uses_localappdata(env, tmp_path):
    package = fake_package(tmp_path / "site-packages", None)
    env.setattr(cache, "_WINDOWS", True)
    env.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert cache.cache_root(package) == tmp_path / "local" / "gated-attention"


def test_source_checkout_keeps_results_at_the_repository_root(env, tmp_path):
    package = fake_package(tmp_path / "clone", OURS)
    assert cache.source_checkout(package) == tmp_path / "clone"
    root = cache.cache_root(package)
    assert root == tmp_path / "clone" / "results"
    assert outside(root, package)


@pytest.mark.parametrize(
    "pyproject", ['[project]\nname = "someone-else"\n', "not toml [", "[tool.x]\n"]
)
def test_another_projects_pyproject_is_not_a_checkout(env, tmp_path, pyproject):
    """A pyproject.toml beside the package that is not ours (a site-packages with stray files,
    a vendored copy): the user's cache, not a results/ folder next to it."""
    package = fake_package(tmp_path / "other", pyproject)
    assert cache.source_checkout(package) is None
    assert cache.cache_root(package) == tmp_path / "home" / ".cache" / "gated-attention"


def test_the_environment_variable_wins(env, tmp_path):
    package = fake_package(tmp_path / "clone", OURS)
    env.setenv(cache.CACHE_ENV, str(tmp_path / "shared"))
    assert cache.cache_root(package) == tmp_path / "shared"
    env.setenv(cache.CACHE_ENV, "")  # empty: as if unset
    assert cache.cache_root(package) == tmp_path / "clone" / "results"


def test_this_checkout_and_entries_are_outside_the_package(env):
    package = Path(cache.__file__).resolve().parents[1]
    root = cache.cache_root()
    assert outside(root, package)
    assert root == (
        package.parent / "results" if cache.source_checkout() else cache.user_cache_dir()
    )


# What the import changes on the user's machine: torch's flush-denormal flag, unless opted out.

FLUSHED = (
    "import torch; torch.set_num_threads(1); "
    "print(bool(torch.tensor(1e-39) * 1.0 == 0), end=' ')"  # a subnormal float32 flushed to 0
)


def flag_after_import(no_flush: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "GATED_ATTENTION_NO_FLUSH"}
    if no_flush is not None:
        env["GATED_ATTENTION_NO_FLUSH"] = no_flush
    code = (
        f"{FLUSHED}; import gated_attention; {FLUSHED}; "
        "from gated_attention.engine import device; "
        f"print(device.flush_denormals(), end=' '); {FLUSHED}; "
        f"device.flush_denormals(force=True); {FLUSHED}"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_import_flushes_denormals_by_default():
    # before the import: not flushed; after: flushed; flush_denormals sets it (True)
    assert flag_after_import(None) == ["False", "True", "True", "True", "True"]
    assert flag_after_import("0") == ["False", "True", "True", "True", "True"]


def test_no_flush_leaves_torch_settings_alone():
    # GATED_ATTENTION_NO_FLUSH=1: neither the import nor flush_denormals (train's call) sets
    # it; force=True (a bench comparing both) still does
    assert flag_after_import("1") == ["False", "False", "False", "False", "True"]


# Running a chapter: the executor refuses a parameter the chapter does not declare (papermill
# itself only warns "Passed unknown parameter" and runs the chapter at its default).


def test_check_parameters_names_the_unknown_and_the_declared():
    import executor

    declared = {"profile": {"name": "profile", "default": '"quick"'}}
    executor.check_parameters(Path("ch.ipynb"), {"profile": "smoke"}, declared)
    with pytest.raises(ValueError, match=r"ch.ipynb: unknown parameter\(s\) 'PROFILE'.*profile"):
        executor.check_parameters(Path("ch.ipynb"), {"PROFILE": "smoke"}, declared)
    with pytest.raises(ValueError, match="declares: none"):
        executor.check_parameters(Path("ch.ipynb"), {"profile": "smoke"}, {})


def test_a_chapter_without_a_profile_parameter_fails_before_it_runs(tmp_path):
    import executor

    md = tmp_path / "lonely.md"
    md.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n"
        "kernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n"
        '```{code-cell} ipython3\nprofile_name = "quick"\n```\n'
    )
    stem, seconds, error = executor._execute_one(str(md), "smoke", None)
    assert (stem, seconds) == ("lonely", None)
    assert "unknown parameter(s) 'profile'" in error and "declares: none" in error


def test_the_build_folder_outside_a_checkout_is_the_working_directory(tmp_path, monkeypatch):
    from gated_attention.report.scorecard import build_dir

    monkeypatch.delenv("GATED_ATTENTION_BUILD", raising=False)
    monkeypatch.chdir(tmp_path)
    assert build_dir() == tmp_path.resolve() / "_build"
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path / "b"))
    assert build_dir() == tmp_path / "b"
