"""The library's front door (workbench.py) and its presets (experiments/presets.py)."""

import pytest
import torch

from gated_attention import construct_rnn, experiments
from gated_attention import workbench as wb
from gated_attention.experiments.presets import PRESETS, preset, with_overrides


def test_presets_are_the_experiments_own_settings():
    ti = experiments.experiment_config("teacher-identification", "quick")
    p = preset("identify")
    assert (p.train, p.T, p.teacher_std, p.n) == (ti.train, ti.T, ti.teacher_std, ti.n)
    sw = experiments.experiment_config("how-many-neurons-A", "quick")
    assert (PRESETS["sweep"].train, PRESETS["sweep"].T) == (sw.train, sw.T)
    assert preset(p) is p
    with pytest.raises(ValueError, match="unknown preset 'prune'.*identify"):
        preset("prune")
    assert with_overrides(p, steps=7).train.steps == 7
    with pytest.raises(ValueError, match="unknown TrainConfig field.*'step'"):
        with_overrides(p, step=7)


def test_identify_reads_the_construction_as_the_construction():
    task = wb.teacher_task(d=3, seed=1)
    planted = construct_rnn(task.teacher, "symmetric")
    found = wb.identify(planted, task)
    assert found.construction == (9, 6, 3)
    assert (found.hidden, found.lam_one, found.lam_zero, found.lam_between) == (9, 6, 3, 0)
    assert found.score_kv < 1e-8 and found.score_q < 1e-8 and found.poly_distance < 1e-8
    assert found.is_construction and "neuron for neuron" in str(found)
    fresh = wb.identify(wb.student(task, 12, seed=0), task)
    assert not fresh.learned_attention and "not (yet)" in str(fresh)


def test_identify_with_more_neurons_is_attention_but_not_the_construction():
    task = wb.teacher_task(d=2, seed=0)
    full = construct_rnn(task.teacher, "full")  # more neurons than the symmetric one
    found = wb.identify(full, task.teacher, T=task.T)
    assert found.learned_attention and not found.is_construction
    assert "more neurons than the construction" in str(found)
    with pytest.raises(ValueError, match="needs T"):
        wb.identify(full, task.teacher)
    with pytest.raises(ValueError, match="differ in size.*d=2.*d=3"):
        wb.identify(full, wb.teacher_task(d=3, seed=0))


def test_fit_returns_a_trained_copy_and_leaves_the_student():
    task = wb.teacher_task(d=2, seed=0)
    s = wb.student(task, 6, seed=0)
    before = {k: v.detach().clone() for k, v in s.state_dict().items()}
    trained, result = wb.fit(s, task, steps=60, log_every=20, chunk_steps=20, history=True)
    assert all(torch.equal(before[k], v) for k, v in s.state_dict().items())
    assert (trained.n, trained.m) == (6, 6)
    assert result.losses.shape == (3, 1) and result.losses[-1, 0] < result.losses[0, 0]
    x = torch.randn(2, task.T, 2, dtype=torch.float64)
    assert not torch.allclose(trained(x), s.double()(x))


def test_fit_refuses_a_student_of_another_d_and_unknown_fields():
    task = wb.teacher_task(d=3, seed=0)
    with pytest.raises(ValueError, match="d=3 but the network is built for d=2"):
        wb.fit(wb.student(wb.teacher_task(d=2), 4), task, steps=10)
    with pytest.raises(ValueError, match="unknown TrainConfig field"):
        wb.fit(wb.student(task, 4), task, steps=10, learning_rate=1e-3)


def test_a_recorded_student_is_the_trained_network_of_its_task():
    trained, task = wb.recorded_student("teacher-identification-chosen-quick", 1)
    found = wb.identify(trained, task)
    assert found.learned_attention and found.poly_distance < 1e-3
    other, _ = wb.recorded_student("teacher-identification-chosen-quick", 0)
    assert not torch.equal(trained.W_in1, other.W_in1)
    with pytest.raises(ValueError, match="out of range.*2 members"):
        wb.recorded_student("teacher-identification-chosen-quick", 2)
    with pytest.raises(ValueError, match="not a teacher-student run"):
        wb.recorded_student("optimiser-comparison-members-paper")
