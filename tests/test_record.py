"""``python -m gated_attention.record``: run a chapter's experiment and record it."""

import dataclasses
import json

import pytest

from gated_attention import experiments as ex
from gated_attention import record as rec
from gated_attention.analysis.configs import teacher_identification_config


@pytest.fixture
def places(tmp_path, monkeypatch):
    """A fresh results cache and recorded-runs folder."""
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GATED_ATTENTION_DEVICE", raising=False)
    monkeypatch.setattr(ex, "RECORDED_ROOT", tmp_path / "recorded")
    return tmp_path


def test_config_for_names_the_experiments():
    c = rec.config_for("teacher-identification", "smoke", seeds=(1,))
    assert c == dataclasses.replace(teacher_identification_config("smoke"), seeds=(1,))
    assert rec.config_for("how-many-neurons-B", "smoke").d == 12
    with pytest.raises(ValueError, match="unknown experiment 'fig9'.*teacher-identification"):
        rec.config_for("fig9", "smoke")
    with pytest.raises(ValueError, match="unknown profile"):
        rec.config_for("teacher-identification", "huge")


def test_record_writes_a_loadable_run_with_provenance(places, capsys):
    assert (
        rec.main(
            ["teacher-identification", "--profile", "smoke", "--seeds", "1", "--name", "ti-smoke"]
        )
        == 0
    )
    assert "recorded:" in capsys.readouterr().out
    back = ex.recorded("ti-smoke")
    assert back.config == rec.config_for("teacher-identification", "smoke", seeds=(1,))
    prov = json.loads((places / "recorded" / "ti-smoke" / "provenance.json").read_text())
    assert prov["command"] == (
        "python -m gated_attention.record teacher-identification --profile smoke --seeds 1 "
        "--name ti-smoke"
    )
    assert prov["run"].startswith("device cpu")
    assert prov["commit"] is None or len(prov["commit"]) == 40
    assert back.provenance == prov
    with pytest.raises(FileExistsError, match="'ti-smoke' exists"):  # before any training
        rec.record("teacher-identification", "smoke", name="ti-smoke")


def test_provenance_names_the_checkout_that_trained(places, monkeypatch):
    states = iter(
        [{"commit": "a" * 40, "tree_clean": True}, {"commit": "b" * 40, "tree_clean": True}]
    )
    monkeypatch.setattr(rec, "git_state", lambda: next(states))
    _, dest = rec.record("teacher-identification", "smoke", name="moved", progress=False)
    prov = json.loads((dest / "provenance.json").read_text())
    assert prov["commit"] == "a" * 40  # taken before training, not after
    assert prov["checkout_at_end"]["commit"] == "b" * 40
    assert "changed while it ran" in prov["code"]


def test_large_entries_need_consent(places, monkeypatch):
    monkeypatch.setattr(rec, "LARGE_MB", 0.0)
    with pytest.raises(ValueError, match="more than LARGE_MB.*--allow-large"):
        rec.record("teacher-identification", "smoke", name="big", progress=False)
    assert "big" not in ex.recorded_names()
    _, dest = rec.record(
        "teacher-identification", "smoke", name="big", allow_large=True, progress=False
    )
    assert dest.name == "big" and "big" in ex.recorded_names()


def test_git_state_outside_a_checkout(tmp_path):
    assert rec.git_state(tmp_path) == {"commit": None, "tree_clean": None}
    state = rec.git_state()  # this package: a git checkout in development, else none
    assert state["commit"] is None or (
        len(state["commit"]) == 40 and state["tree_clean"] in (True, False)
    )
