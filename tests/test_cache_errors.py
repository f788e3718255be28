"""A results cache that cannot be written is an error that names the folder and the variable
that moves it (GATED_ATTENTION_CACHE), not a bare pathlib traceback."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from gated_attention.experiments import cache


@dataclasses.dataclass(frozen=True)
class Tiny:
    """The smallest experiment config ``cache.run`` takes; records that it computed."""

    name: str = "tiny"

    def compute(self, *, checkpoint, progress):
        Tiny.computed = True
        return {"x": torch.zeros(2)}, {"ok": 1}


@pytest.fixture
def fast_hash(monkeypatch):
    monkeypatch.setattr(cache, "code_hash", lambda root=None, *, config=None: "0" * 64)
    Tiny.computed = False


def test_a_cache_folder_under_a_file_names_the_folder_and_the_variable(
    tmp_path, monkeypatch, fast_hash
):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker / "cache"))
    with pytest.raises(cache.CacheWriteError) as err:
        cache.run(Tiny(), progress=False)
    msg = str(err.value)
    assert msg.startswith(f"cannot write the results cache at {blocker / 'cache'}: ")
    assert "Not a directory" in msg and "set GATED_ATTENTION_CACHE to a writable folder" in msg
    assert isinstance(err.value, OSError) and isinstance(err.value.__cause__, OSError)
    assert not Tiny.computed  # refused before any compute


def test_permission_denied_on_creating_the_entry(tmp_path, monkeypatch, fast_hash):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))

    def denied(self, *args, **kwargs):  # what a read-only folder does (tests may run as root)
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", denied)
    with pytest.raises(cache.CacheWriteError, match="Permission denied.*GATED_ATTENTION_CACHE"):
        cache.run(Tiny(), progress=False)


def test_a_failing_write_of_the_entry_names_the_cache(tmp_path, monkeypatch, fast_hash):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))

    def full(path, write):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(cache, "atomic_write", full)
    with pytest.raises(cache.CacheWriteError, match="No space left.*GATED_ATTENTION_CACHE"):
        cache.run(Tiny(), progress=False)
    assert Tiny.computed


def test_an_oserror_of_the_computation_itself_is_not_relabelled(tmp_path, monkeypatch, fast_hash):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))

    @dataclasses.dataclass(frozen=True)
    class Reads(Tiny):
        def compute(self, *, checkpoint, progress):
            raise FileNotFoundError(2, "No such file or directory", "/no/such/data")

    with pytest.raises(FileNotFoundError) as err:
        cache.run(Reads(), progress=False)
    assert not isinstance(err.value, cache.CacheWriteError)


def test_a_writable_cache_still_works(tmp_path, monkeypatch, fast_hash):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    first = cache.run(Tiny(), progress=False)
    assert not first.cached and cache.run(Tiny(), progress=False).cached
