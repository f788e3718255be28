"""A plan's step counts kept between calls (gated_attention/tools/kept_counts.py): read back
as counted, under the key of the code, torch and machine they were counted with, counted
afresh under another key or from a file that cannot be read, kept when a call stops early; and
a second plan from the kept file counts nothing and prints the same."""

from __future__ import annotations

import json

import pytest

from lab import gpu_plan
from lab.kept_counts import (
    COUNTING,
    counted_modules,
    counts_key,
    kept_counts,
    read_counts,
    write_counts,
)

# keys of the shapes gpu_plan uses: nested tuples of names, shapes, None, booleans
COUNTED = {
    ("flops", ((("W_in1", (3, 8, 5)),), "None", 32, "TeacherStudentTask", 64), None): 1.5e9,
    ("kernels", (("W_in1",), 3), "compiled", True): {"kernels": 26.0, "compile_s": 0.5},
}


def test_counts_read_back_as_they_were_counted(tmp_path):
    path = tmp_path / "counts.json"
    write_counts(path, COUNTED)
    assert read_counts(path) == COUNTED


def test_counts_kept_under_another_key_are_counted_afresh(tmp_path):
    path = tmp_path / "counts.json"
    key = counts_key()
    write_counts(path, COUNTED, key)
    assert read_counts(path, key) == COUNTED
    for part in ("source", "torch", "cpu"):
        assert read_counts(path, {**key, part: "another"}) == {}


def test_the_key_covers_the_code_the_counted_steps_run():
    modules = counted_modules()
    for m in ("engine.loop", "engine.steps", "models.fast_path", "models.lstm",
              "tasks.teacher_student", "experiments.how_many_neurons"):  # fmt: skip
        assert f"gated_attention.{m}" in modules
    assert [p.name for p in COUNTING] == ["device_time.py", "own_sizes.py"]
    assert not any(m.startswith("gated_attention.report") for m in modules)


def test_a_file_that_cannot_be_read_is_named_and_replaced(tmp_path):
    path = tmp_path / "counts.json"
    path.write_text('{"key": {"source": ')
    with pytest.warns(RuntimeWarning, match="counts.json.*cannot be read"):
        with kept_counts(path) as counted:
            assert counted == {}
            counted.update(COUNTED)
    assert read_counts(path) == COUNTED


def test_what_was_counted_is_kept_when_a_call_stops(tmp_path):
    path = tmp_path / "counts.json"
    with pytest.raises(KeyboardInterrupt), kept_counts(path) as counted:
        counted.update(COUNTED)
        raise KeyboardInterrupt
    assert read_counts(path) == COUNTED
    with kept_counts(path, fresh=True) as counted:
        assert counted == {}  # --recount
    assert json.loads(path.read_text())["counts"] == {}


def test_a_second_plan_counts_nothing_and_prints_the_same(tmp_path, monkeypatch, capsys):
    argv = ["--profile", "smoke", "--only", "how-many-neurons-A", "--counts",
            str(tmp_path / "counts.json")]  # fmt: skip
    assert gpu_plan.main(argv) == 0
    first = capsys.readouterr().out

    def counting(*args, **kwargs):
        raise AssertionError("a kept step was counted again")

    monkeypatch.setattr(gpu_plan, "step_kernels", counting)
    monkeypatch.setattr(gpu_plan, "flops_per_step", counting)
    assert gpu_plan.main(argv) == 0
    assert capsys.readouterr().out == first
