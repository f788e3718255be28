"""The campaign trains the missing runs central claims first within a budget, stops at it,
resumes from its pack, and records what finished where the chapters read it."""

from __future__ import annotations

import pytest

from gated_attention.experiments.cache import read_entry
from gated_attention.experiments.registry import config_from_dict, experiment_config
from lab import campaign as cp


def test_central_claims_come_first():
    names = ["associative-recall", "fig4b-setup", "architectures-teacher", "how-many-neurons-B"]
    assert cp.order(names) == [
        "how-many-neurons-B",
        "architectures-teacher",
        "associative-recall",
        "fig4b-setup",
    ]
    assert cp.order(list(cp.CENTRAL)) == list(cp.CENTRAL)
    assert cp.CENTRAL.index("architectures-teacher-lr") < cp.CENTRAL.index("architectures-teacher")


def test_no_budget_left_starts_nothing(tmp_path):
    ran = []
    out = cp.campaign(
        tmp_path, 0.0, profile="smoke", names=["teacher-identification"], runner=ran.append
    )
    assert out.left == ["teacher-identification"] and not ran and not out.finished


def test_a_pack_over_the_transfer_is_refused(tmp_path, monkeypatch):
    (tmp_path / "out" / "cache").mkdir(parents=True)
    (tmp_path / "out" / "cache" / "big.bin").write_bytes(__import__("os").urandom(300_000))
    monkeypatch.setattr(cp, "PART_MB", 0.1)  # parts of 0.1 MiB: three are needed, one allowed
    monkeypatch.setattr(cp, "MAX_PARTS", 1)
    with pytest.raises(ValueError, match="more than 1 parts"):
        cp.pack(tmp_path / "out", tmp_path / "pack")
    assert not (tmp_path / "pack").exists()


def test_run_stop_resume_from_the_pack_and_record(tmp_path):
    name = "teacher-identification"
    first = cp.campaign(tmp_path / "a", 0.5, profile="smoke", names=[name])
    assert first.stopped == [name] and not first.finished  # stopped at the budget
    parts = cp.pack(tmp_path / "a", tmp_path / "pack1")
    assert 1 <= len(parts) <= cp.MAX_PARTS
    cp.unpack(tmp_path / "pack1", tmp_path / "b")  # another machine: resume from the pack
    second = cp.campaign(tmp_path / "b", 600, profile="smoke", names=[name])
    assert second.finished == [f"{name}-smoke-cpu"], second.failed
    again = cp.campaign(tmp_path / "b", 600, profile="smoke", names=[name])
    assert not again.finished and not again.stopped  # recorded: not trained again
    cp.pack(tmp_path / "b", tmp_path / "pack2")
    shipped = tmp_path / "recorded"
    shipped.mkdir()
    names = cp.unpack(tmp_path / "pack2", tmp_path / "c", recorded_root=shipped)
    assert names == [f"{name}-smoke-cpu"]
    meta, tensors = read_entry(shipped / names[0])  # what experiments.recorded reads
    assert config_from_dict(meta["config"]) == experiment_config(name, "smoke")
    assert "params" in tensors


def test_a_damaged_pack_is_named(tmp_path):
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "campaign.tar.xz.00").write_bytes(b"not a tar")
    with pytest.raises(ValueError, match="damaged or incomplete"):
        cp.unpack(tmp_path / "pack", tmp_path / "out")


def test_the_compiled_code_travels_where_it_fits_and_is_left_out_first(tmp_path, monkeypatch):
    import os

    out = tmp_path / "out"
    (out / "cache").mkdir(parents=True)
    (out / "cache" / "run.bin").write_bytes(os.urandom(50_000))
    (out / cp.COMPILED).mkdir()
    (out / cp.COMPILED / "kernel.so").write_bytes(os.urandom(40_000))
    cp.pack(out, tmp_path / "fits")
    cp.unpack(tmp_path / "fits", tmp_path / "a")
    assert (tmp_path / "a" / cp.COMPILED / "kernel.so").exists()
    monkeypatch.setattr(cp, "PART_MB", 0.06)  # one part of 0.06 MiB: the runs alone fit
    monkeypatch.setattr(cp, "MAX_PARTS", 1)
    cp.pack(out, tmp_path / "tight")
    cp.unpack(tmp_path / "tight", tmp_path / "b")
    assert (tmp_path / "b" / "cache" / "run.bin").exists()
    assert not (tmp_path / "b" / cp.COMPILED).exists()
    seen = {}
    monkeypatch.setattr(cp.subprocess, "Popen", lambda cmd, env, **kw: seen.update(env) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        cp.record_runner("teacher-identification", "smoke", out / "cache", 1.0)
    assert seen["TORCHINDUCTOR_CACHE_DIR"] == str(out / cp.COMPILED)
