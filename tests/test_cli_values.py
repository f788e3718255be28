"""``python -m gated_attention run --set FIELD=VALUE`` reads VALUE as the field's declared type,
checks the config before any training step, and expected failures exit 2 with one line."""

import pytest

from gated_attention import experiments
from gated_attention.engine.guards import NonFiniteLossError
from gated_attention.experiments.cache import CacheWriteError
from gated_attention.tools import cli, overrides

RUN = ["run", "how-many-neurons-A", "--profile", "smoke", "--steps", "2"]


@pytest.fixture
def no_training(monkeypatch, tmp_path):
    """The CLI's run fails the test if called; returns the configs it was given."""
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))
    seen = []

    def fake_run(config, progress=True):
        seen.append(config)
        raise AssertionError("a training step ran")

    monkeypatch.setattr(cli, "run", fake_run)
    return seen


def error_line(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("text", "value"),
    [("false", False), ("No", False), ("0", False), ("TRUE", True), ("yes", True), ("1", True)],
)
def test_bool_words_build_the_config(text, value):
    config = experiments.experiment_config("how-many-neurons-A", "smoke")
    assert overrides.override(config, "side", text).side is value


def test_side_false_trains_without_side_gating(monkeypatch, tmp_path, capsys):
    seen = []

    class DoneError(Exception):
        pass

    def fake_run(config, progress=True):
        seen.append(config)
        raise DoneError

    monkeypatch.setattr(cli, "run", fake_run)
    with pytest.raises(DoneError):
        cli.main([*RUN, "--set", "side=false"])
    assert seen[0].side is False


@pytest.mark.parametrize("text", ["maybe", "no way", "2", ""])
def test_a_bad_bool_is_one_line_naming_the_field_and_words(text, no_training, capsys):
    err = error_line(capsys, [*RUN, "--set", f"side={text}"])
    assert "side must be true or false" in err and "yes/no" in err and "1/0" in err
    assert no_training == []


def test_numbers_tuples_and_none_by_type():
    config = experiments.experiment_config("how-many-neurons-A", "smoke")
    new = overrides.override(config, "train.lr", "3e-3")
    assert new.train.lr == 3e-3 and isinstance(new.train.lr, float)
    assert overrides.override(config, "T", "16").T == 16
    assert overrides.override(config, "train.steps", "1e4").train.steps == 10_000
    assert overrides.override(config, "lam_range", "(0.25,0.5)").lam_range == (0.25, 0.5)
    assert overrides.override(config, "lam_range", "0.25,0.5").lam_range == (0.25, 0.5)
    assert overrides.override(config, "lam_range", "[0, 1]").lam_range == (0.0, 1.0)
    assert overrides.override(config, "sizes", "4").sizes == (4,)
    assert overrides.override(config, "sizes", "(4, 8)").sizes == (4, 8)
    assert overrides.override(config, "teacher_rank", "2").teacher_rank == 2
    assert overrides.override(config, "teacher_rank", "None").teacher_rank is None
    assert overrides.override(config, "teacher_std", "none").teacher_std is None
    assert overrides.override(config, "train.schedule", "constant").train.schedule == "constant"
    with pytest.raises(ValueError, match="T must be an integer, got '1.5'"):
        overrides.override(config, "T", "1.5")
    with pytest.raises(ValueError, match="train.lr must be a number, got 'fast'"):
        overrides.override(config, "train.lr", "fast")
    with pytest.raises(ValueError, match="lam_range must be a tuple of 2 values"):
        overrides.override(config, "lam_range", "0.1,0.2,0.3")
    with pytest.raises(ValueError, match="teacher_rank must be an integer or none"):
        overrides.override(config, "teacher_rank", "full")
    with pytest.raises(ValueError, match="train is a TrainConfig: set its fields"):
        overrides.override(config, "train", "1")


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ("eval_batch=0", "eval_batch must be a positive integer"),
        ("teacher_rank=9", "rank must be between 1 and d=4"),
        ("lam_range=(0.5,2.0)", "lam must lie in [0, 1]"),
        ("lam_range=0.5,2.0", "lam must lie in [0, 1]"),
        ("train.lr=-1", "lr"),
        ("T=0", "positive integers"),
        ("nope=1", "no field 'nope'; its fields: name, d, T"),
        ("train.nope=1", "no field 'nope'"),
        ("seeds=a,b", "each item of seeds must be an integer"),
        ("=3", "FIELD=VALUE"),
    ],
)
def test_a_config_that_fails_its_checks_stops_before_training(setting, words, no_training, capsys):
    err = error_line(capsys, [*RUN, "--set", setting])
    assert err.startswith("python -m gated_attention run: error: ") and words in err
    assert no_training == []


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (
            KeyboardInterrupt(),
            "interrupted; run the same command again to resume from the last checkpoint",
        ),
        (CacheWriteError("cannot write the results cache at /x: denied"), "cannot write the"),
        (
            NonFiniteLossError(
                "training diverged: the loss of member(s) [0]",
                steps=(1, 2),
                members=[0],
                checkpoint=None,
                partial=None,
            ),
            "training diverged: the loss of member(s) [0]",
        ),
    ],
)
def test_expected_failures_while_running_are_one_line(error, words, monkeypatch, capsys):
    def fake_run(config, progress=True):
        raise error

    monkeypatch.setattr(cli, "run", fake_run)
    err = error_line(capsys, [*RUN, "--retrain"])
    assert words in err


def test_an_unexpected_error_keeps_its_traceback(monkeypatch):
    def fake_run(config, progress=True):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(cli, "run", fake_run)
    with pytest.raises(ZeroDivisionError):
        cli.main([*RUN, "--retrain"])
