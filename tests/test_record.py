"""``python -m dev.record``: run a chapter's experiment and record it."""

import dataclasses
import json

import pytest

from dev import record as rec
from gated_attention import experiments as ex
from gated_attention.engine import TrainConfig
from gated_attention.experiments import recorded_runs
from gated_attention.experiments.teacher_identification import teacher_identification_config


def tiny(profile="smoke"):
    """A teacher-student config of one ensemble that trains in well under a second."""
    tc = TrainConfig(steps=20, batch_size=8, log_every=5, chunk_steps=5, checkpoint_every=5)
    return ex.TeacherStudentConfig(name="tiny", d=3, T=5, n=6, m=6, eval_batch=16, train=tc)


@pytest.fixture
def places(tmp_path, monkeypatch):
    """A fresh results cache and recorded-runs folder."""
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GATED_ATTENTION_DEVICE", raising=False)
    monkeypatch.setattr(recorded_runs, "RECORDED_ROOT", tmp_path / "recorded")
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
        "python -m dev.record teacher-identification --profile smoke --seeds 1 --name ti-smoke"
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


def test_resume_from_a_checkpoint_written_elsewhere(places, monkeypatch, interrupt_at_chunk):
    import shutil

    import torch

    monkeypatch.setitem(rec.EXPERIMENTS, "tiny", tiny)
    whole = ex.run(tiny(), progress=False)  # uninterrupted, for comparison
    shutil.rmtree(whole.path)
    interrupt_at_chunk(3, lambda: ex.run(tiny(), progress=False))  # checkpoint at step 10
    moved = places / "elsewhere.pt"  # as if brought from another machine
    shutil.move(whole.path / "ensemble-0.pt", moved)
    shutil.rmtree(whole.path)
    result, dest = rec.record("tiny", "smoke", name="tiny-resumed", resume_from=moved)
    assert result.metrics["resumed_from_step"] == 10
    for k, v in whole.params.items():  # the same run as the uninterrupted one
        torch.testing.assert_close(result.params[k], v, rtol=0, atol=0)
    prov = json.loads((dest / "provenance.json").read_text())
    assert prov["resumed_from"]["step"] == 10 and prov["resumed_from"]["file"] == "elsewhere.pt"
    assert len(prov["resumed_from"]["sha256"]) == 64 and "resumed from step 10" in prov["code"]
    # a complete entry has nothing to resume
    with pytest.raises(FileExistsError, match="already complete"):
        rec.place_checkpoint(tiny(), moved)


def test_resume_from_refuses_what_does_not_fit(places, monkeypatch, interrupt_at_chunk):
    import shutil

    monkeypatch.setitem(rec.EXPERIMENTS, "tiny", tiny)
    interrupt_at_chunk(3, lambda: ex.run(tiny(), progress=False))
    entry = ex.entry_path(tiny())
    ckpt = places / "ckpt.pt"
    shutil.copy(entry / "ensemble-0.pt", ckpt)
    with pytest.raises(FileExistsError, match="exists .*interrupted run"):
        rec.place_checkpoint(tiny(), ckpt)  # the entry has a checkpoint of its own
    two = dataclasses.replace(tiny(), seeds=(0, 1))
    with pytest.raises(ValueError, match="holds 1 members; the config has 2"):
        rec.place_checkpoint(two, ckpt)
    done = dataclasses.replace(tiny(), train=dataclasses.replace(tiny().train, steps=10))
    with pytest.raises(ValueError, match="at step 10; resuming needs 0 < step < 10"):
        rec.place_checkpoint(done, ckpt)
    (places / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="junk.pt cannot be read as a training checkpoint"):
        rec.place_checkpoint(tiny(), places / "junk.pt")
    # a run that does not resume from the placed checkpoint is not recorded
    note = {"file": "x", "sha256": "0" * 64, "step": 15}
    (entry / rec.RESUMED_NOTE).write_text(json.dumps(note))  # placed, but the run has step 10
    with pytest.raises(RuntimeError, match="did not resume from x at step 15.*not recorded"):
        rec.record("tiny", "smoke", name="never", progress=False)
    assert "never" not in ex.recorded_names()


def test_a_resumed_run_finished_by_a_later_call_still_names_its_checkpoint(
    places, monkeypatch, interrupt_at_chunk
):
    import shutil

    monkeypatch.setitem(rec.EXPERIMENTS, "tiny", tiny)
    interrupt_at_chunk(2, lambda: ex.run(tiny(), progress=False))  # checkpoint at step 5
    entry = ex.entry_path(tiny())
    shutil.move(entry / "ensemble-0.pt", places / "first.pt")
    # resumed from step 5, interrupted again (checkpoint at step 15), finished by a plain call
    interrupt_at_chunk(3, lambda: rec.record("tiny", "smoke", resume_from=places / "first.pt"))
    result, dest = rec.record("tiny", "smoke", name="twice", progress=False)
    assert result.metrics["resumed_from_step"] == 15
    prov = json.loads((dest / "provenance.json").read_text())
    assert prov["resumed_from"]["file"] == "first.pt" and prov["resumed_from"]["step"] == 5


def test_a_recorded_run_is_not_a_change_of_the_code(tmp_path):
    """git_state: an untracked recorded run (what this command writes) leaves the tree clean;
    an untracked or changed module does not."""
    import subprocess

    pkg = tmp_path / "pkg"
    (pkg / "recorded").mkdir(parents=True)
    (pkg / "module.py").write_text("x = 1\n")

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    assert rec.git_state(pkg)["tree_clean"] is True
    (pkg / "recorded" / "run-cpu").mkdir()
    (pkg / "recorded" / "run-cpu" / "meta.json").write_text("{}")
    assert rec.git_state(pkg)["tree_clean"] is True
    (pkg / "module.py").write_text("x = 2\n")
    assert rec.git_state(pkg)["tree_clean"] is False


def test_replace_swaps_a_recorded_run_only_once_the_new_one_is_written(tmp_path, monkeypatch):
    from dev import record as rec
    from gated_attention import experiments

    monkeypatch.setattr(recorded_runs, "RECORDED_ROOT", tmp_path)
    monkeypatch.setattr(rec, "git_state", lambda: {"commit": "c" * 40, "tree_clean": True})
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    old = tmp_path / "run-x"
    old.mkdir()
    (old / "marker").write_text("old")

    def failing(result, name, **provenance):
        assert not old.exists()  # aside while the new one is written
        raise OSError("disk full")

    monkeypatch.setattr(rec, "save_recorded", failing)
    monkeypatch.setattr(experiments, "recorded_names", lambda: ["run-x"])
    with pytest.raises(OSError, match="disk full"):
        rec.record("teacher-identification", "smoke", name="run-x", replace=True, progress=False)
    assert (old / "marker").read_text() == "old"  # put back
    with pytest.raises(FileExistsError):
        rec.record("teacher-identification", "smoke", name="run-x", progress=False)

    def written(result, name, **provenance):
        (tmp_path / name).mkdir()
        (tmp_path / name / "marker").write_text("new")
        return tmp_path / name

    monkeypatch.setattr(rec, "save_recorded", written)
    rec.record("teacher-identification", "smoke", name="run-x", replace=True, progress=False)
    assert (old / "marker").read_text() == "new"
