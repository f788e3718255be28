"""Configs, profiles and the results cache (gated_attention/experiments.py)."""

import dataclasses
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import gated_attention
from gated_attention import experiments as ex
from gated_attention.engine import TrainConfig
from gated_attention.experiments import cache as cache_module
from gated_attention.experiments import recorded_runs


def tiny(**overrides):
    """A teacher-student config that trains in well under a second."""
    tc = TrainConfig(steps=20, batch_size=8, log_every=5, chunk_steps=5, checkpoint_every=5)
    base = ex.TeacherStudentConfig(name="tiny", d=3, T=5, n=6, m=6, eval_batch=16, train=tc)
    return dataclasses.replace(base, **overrides)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_check_profile():
    assert ex.check_profile("quick") == "quick"
    with pytest.raises(ValueError, match="smoke, quick, paper"):
        ex.check_profile("fast")


def test_members_and_seeds():
    cfg = tiny(sizes=(4, 8), seeds=(0, 1))
    assert cfg.members() == [(0, 4, 4), (1, 4, 4), (0, 8, 8), (1, 8, 8)]
    assert tiny().members() == [(0, 6, 6)]
    assert ex.derive_seed(0, "data") != ex.derive_seed(0, "teacher") != ex.derive_seed(1, "teacher")
    assert ex.derive_seed(3, "data") == ex.derive_seed(3, "data")
    with pytest.raises(ValueError, match="seeds"):
        tiny(seeds=())


@pytest.mark.slow
def test_paper_profile_runs_end_to_end():
    """The paper's configuration (d 4, n = m = 100, T 32, batch 64) is accepted; 2 steps of it."""
    paper = ex.teacher_identification_config("paper")
    cfg = dataclasses.replace(paper, train=dataclasses.replace(paper.train, steps=2), eval_batch=8)
    cfg = dataclasses.replace(cfg, seeds=(0,))
    tensors, metrics = cfg.compute(checkpoint=None, progress=False)
    assert tensors["params"]["W_out1"].shape == (1, 100, 100)
    assert tensors["losses"].shape == (1, 1) and tensors["loss_steps"].tolist() == [2]
    assert all(torch.isfinite(torch.tensor(metrics["eval_loss"])))


def test_run_caches_and_records_provenance(cache):
    cfg = tiny(seeds=(0, 1), sizes=(4, 6))
    first = ex.run(cfg, progress=False)
    assert not first.cached and first.path.parent == cache
    assert first.path.name.startswith("tiny-") and (first.path / "manifest.json").exists()
    assert not (first.path / "checkpoint.pt").exists()  # removed once the entry is complete
    again = ex.run(cfg, progress=False)
    assert again.cached
    for k, v in first.params.items():
        torch.testing.assert_close(again.params[k], v, rtol=0, atol=0)
    meta = json.loads((first.path / "meta.json").read_text())
    assert meta["config"]["fields"]["sizes"] == [4, 6]
    assert meta["torch_version"] == torch.__version__
    assert meta["package_version"] == gated_attention.__version__
    assert meta["code_hash"] == ex.code_hash(config=cfg) and meta["wall_time_s"] > 0
    assert set(meta["hardware"]) >= {"machine", "cpu", "cpu_count", "torch_threads", "device"}
    assert meta["hardware"]["device"] == "cpu"
    assert len(meta["metrics"]["eval_loss"]) == 4
    students = again.students()
    assert [(s.n, s.m) for s in students] == [(4, 4), (4, 4), (6, 6), (6, 6)]
    # another config, another entry
    assert ex.entry_path(tiny(seeds=(2,))) != ex.entry_path(cfg)


def test_an_entry_names_the_code_that_trained_it(cache, monkeypatch):
    hashes = iter(["code-at-start", "code-edited-during-the-run"])
    monkeypatch.setattr(
        cache_module, "code_hash", lambda root=None, config=None: next(hashes, "later")
    )
    result = ex.run(tiny(), progress=False)
    assert result.meta["code_hash"] == "code-at-start"
    assert result.path.name == f"tiny-{ex.config_hash(tiny(), 'code-at-start')}"


def test_corrupt_entry_is_recomputed_with_a_warning(cache):
    cfg = tiny()
    first = ex.run(cfg, progress=False)
    data = bytearray((first.path / "tensors.pt").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (first.path / "tensors.pt").write_bytes(bytes(data))
    with pytest.warns(UserWarning, match=f"{first.path.name}.*corrupt"):
        again = ex.run(cfg, progress=False)
    assert not again.cached
    torch.testing.assert_close(again.params["D"], first.params["D"], rtol=0, atol=0)
    assert ex.run(cfg, progress=False).cached  # and now it is intact


def test_partial_entry_is_recomputed_with_a_warning(cache):
    cfg = tiny()
    first = ex.run(cfg, progress=False)
    (first.path / "manifest.json").unlink()
    with pytest.warns(UserWarning, match=f"{first.path.name}.*partial"):
        assert not ex.run(cfg, progress=False).cached


def test_interrupted_run_resumes_from_its_checkpoint(cache, interrupt_at_chunk):
    cfg = tiny()
    whole = ex.run(cfg, progress=False)
    shutil.rmtree(whole.path)
    interrupt_at_chunk(3, lambda: ex.run(cfg, progress=False))
    assert (whole.path / "ensemble-0.pt").exists()  # the one job's checkpoint
    resumed = ex.run(cfg, progress=False)
    assert resumed.metrics["resumed_from_step"] == 10
    for k, v in whole.params.items():
        torch.testing.assert_close(resumed.params[k], v, rtol=0, atol=0)


def _package_copy(tmp_path):
    pkg = Path(gated_attention.__file__).parent
    copy = tmp_path / "pkg"
    shutil.copytree(pkg, copy, ignore=shutil.ignore_patterns("__pycache__", "recorded"))
    return pkg, copy


def _touch(copy, rel):
    (copy / rel).write_text((copy / rel).read_text() + "\n# edited\n")


def test_code_hash_covers_model_code_not_presentation(tmp_path):
    pkg, copy = _package_copy(tmp_path)
    base = ex.code_hash(copy)
    assert base == ex.code_hash(pkg)
    for presentation in ("tools/cli.py", "report/plotting.py"):
        _touch(copy, presentation)
    assert ex.code_hash(copy) == base
    _touch(copy, "models/gated_rnn.py")
    assert ex.code_hash(copy) != base


def test_the_key_covers_what_the_experiment_imports(tmp_path):
    """The three cache-key cases: pruning code is in the optimiser comparison's key (it prunes
    inside compute), a model family the teacher-student run does not use is not, and no
    chapter or report module is in any key."""
    pkg, copy = _package_copy(tmp_path)
    optim = ex.optimiser_comparison_config("smoke")
    teacher = ex.teacher_identification_config("smoke")
    keys = lambda: {c: ex.code_hash(copy, config=c) for c in (optim, teacher)}  # noqa: E731
    base = keys()
    assert base[optim] == ex.code_hash(pkg, config=optim)
    _touch(copy, "analysis/pruning.py")
    after = keys()
    assert after[optim] != base[optim] and after[teacher] == base[teacher]
    _touch(copy, "models/mamba.py")
    assert keys() == after
    _touch(copy, "report/scorecard.py")
    chapter = copy.parent / "book.md"  # a chapter is not in the package: nothing to hash
    chapter.write_text("# a chapter\n")
    assert keys() == after
    _touch(copy, "engine/loop.py")  # the engine trains both
    assert all(keys()[c] != after[c] for c in (optim, teacher))


def test_imports_resolve_through_package_inits():
    from gated_attention.experiments import code_key

    mods = code_key.imports_of("gated_attention.experiments.optimiser_comparison")
    assert "gated_attention.analysis.pruning" in mods  # a lazy import inside a method
    assert "gated_attention.engine.ensembles" in mods  # from ..engine import unstack_students
    assert "gated_attention.engine" not in mods  # the __init__ only re-exports
    closure = code_key.closure("gated_attention.experiments.teacher_student")
    assert "gated_attention.models.mamba" not in closure
    assert not any(
        m.startswith(("gated_attention.report", "gated_attention.tools")) for m in closure
    )
    with pytest.raises(ValueError, match="not a module"):
        code_key.imports_of("numpy")


def test_config_hash_and_bad_configs():
    assert ex.config_hash(tiny()) == ex.config_hash(tiny())
    assert ex.config_hash(tiny()) != ex.config_hash(tiny(init_scale=0.5))
    with pytest.raises(TypeError, match="dataclass"):
        ex.config_hash({"name": "x"})
    with pytest.raises(TypeError, match="TrainConfig"):
        tiny(train={"steps": 3})


# --- recorded runs -------------------------------------------------------------------------


def every_config():
    """Every registered config in every profile (an experiment that reads another's entry,
    ``registry.NEEDS``, is built from a stand-in entry: no training here)."""
    from gated_attention.experiments.registry import NEEDS

    for profile in ex.PROFILES:
        for name in ex.EXPERIMENTS:
            if name in NEEDS:
                yield ex.experiment_config(name, profile, resolve=_stand_in_sweep)
            else:
                yield ex.experiment_config(name, profile)


def _stand_in_sweep(config):
    """An lr-sweep entry whose every group has a loss of its index (the first rate wins)."""
    loss = torch.arange(len(config.groups()), dtype=torch.float64)[:, None]
    return SimpleNamespace(tensors={"eval_loss": loss.expand(-1, len(config.seeds))})


def test_config_from_dict_inverts_what_run_stores():
    for config in every_config():
        stored = json.loads(
            json.dumps(cache_module._config_dict(config), default=str)
        )  # as in meta.json
        assert ex.config_from_dict(stored) == config
    with pytest.raises(ValueError, match="unknown config type 'Nope'"):
        ex.config_from_dict({"type": "Nope", "fields": {}})
    stored = cache_module._config_dict(tiny())
    stored["fields"]["gone"] = 1
    with pytest.raises(ValueError, match="no field.*gone"):
        ex.config_from_dict(stored)


def test_the_recorded_paper_run_is_the_paper_profile():
    from gated_attention import experiments as configs

    assert "teacher-identification-paper-seed0" in ex.recorded_names()
    r = ex.recorded("teacher-identification-paper-seed0")
    paper = configs.teacher_identification_config("paper")
    assert r.config == dataclasses.replace(paper, seeds=(0,))
    assert r.tensors["sizes"].tolist() == [[100, 100]]
    assert int(r.tensors["loss_steps"][-1]) == paper.train.steps
    (student,) = r.students()
    assert (student.n, student.m, student.d) == (100, 100, 4)
    assert len(r.provenance["commit"]) == 40 and "command" in r.provenance
    assert r.meta["code_hash"] and r.meta["hardware"]["cpu"]


def test_the_recorded_gpu_run_is_the_whole_paper_profile():
    """The paper profile itself (three seeds, one ensemble), trained on a GPU: every member
    trained the full budget, and the run says where it ran."""
    from gated_attention import experiments as configs

    r = ex.recorded("teacher-identification-paper-gpu")
    paper = configs.teacher_identification_config("paper")
    assert r.config == paper and r.config.seeds == (0, 1, 2)
    assert r.tensors["sizes"].tolist() == [[100, 100]] * 3
    assert int(r.tensors["loss_steps"][-1]) == paper.train.steps
    assert r.meta["hardware"]["device"] == "cuda" and r.metrics["resumed_from_step"] == 0
    assert len(r.students()) == 3 and len(r.metrics["eval_loss"]) == 3
    assert len(r.provenance["commit"]) == 40 and "cuda" in r.provenance["command"]


def test_recorded_errors_name_the_problem(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="no recorded run 'nope'.*teacher-identification"):
        ex.recorded("nope")
    src = ex.RECORDED_ROOT / "teacher-identification-paper-seed0"
    monkeypatch.setattr(recorded_runs, "RECORDED_ROOT", tmp_path)
    shutil.copytree(src, tmp_path / "copy")
    assert ex.recorded("copy").metrics == json.loads((src / "meta.json").read_text())["metrics"]
    with open(tmp_path / "copy" / "tensors.pt", "r+b") as f:  # one byte altered
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(ValueError, match="damaged.*tensors.pt"):
        ex.recorded("copy")


def test_save_recorded_round_trip(cache, tmp_path, monkeypatch):
    from dev.record import save_recorded

    monkeypatch.setattr(recorded_runs, "RECORDED_ROOT", tmp_path / "recorded")
    result = ex.run(tiny(), progress=False)
    dest = save_recorded(result, "tiny-run", commit="abc", command="run(tiny())")
    back = ex.recorded("tiny-run")
    assert dest == tmp_path / "recorded" / "tiny-run"
    assert back.config == result.config and back.provenance["commit"] == "abc"
    for k, v in result.params.items():
        assert torch.equal(back.params[k], v)
    with pytest.raises(FileExistsError, match="tiny-run"):
        save_recorded(result, "tiny-run")


def test_sensitivity_changes_one_optimiser_setting_at_the_papers_size():
    from gated_attention.experiments.teacher_identification import LR, WEIGHT_DECAY

    chosen = ex.sensitivity_config("quick", "chosen")
    assert (chosen.n, chosen.m, chosen.seeds) == (100, 100, (3, 4))
    assert (chosen.train.lr, chosen.train.weight_decay) == (LR, WEIGHT_DECAY)
    half = ex.sensitivity_config("quick", "wd-half")
    assert half.train.weight_decay == WEIGHT_DECAY / 2 and half.train.lr == LR
    assert dataclasses.replace(half, train=chosen.train, name=chosen.name) == chosen
    assert ex.sensitivity_config("quick", "lr-double").train.lr == 2 * LR
    paper = ex.sensitivity_config("paper", "chosen")
    assert dataclasses.replace(paper, name="teacher-identification") == (
        ex.teacher_identification_config("paper")
    )
    with pytest.raises(ValueError, match="unknown setting"):
        ex.sensitivity_config("quick", "wd-triple")
