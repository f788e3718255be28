"""The command line (tools/cli.py, ``python -m gated_attention``) and the whole-run progress
line (experiments/runner.py)."""

import pytest

from gated_attention import experiments
from gated_attention.experiments.recorded_runs import recorded_match
from gated_attention.experiments.runner import overall_progress
from gated_attention.tools import cli, overrides


def test_parse_value_reads_literals_and_keeps_strings():
    assert overrides.parse_value("3e-3") == 3e-3 and overrides.parse_value("16") == 16
    assert overrides.parse_value("(0, 1)") == (0, 1) and overrides.parse_value("cosine") == "cosine"


def test_override_sets_nested_fields_and_names_unknown_ones():
    config = experiments.experiment_config("teacher-identification", "smoke")
    new = overrides.override(config, "train.lr", 3e-3)
    assert new.train.lr == 3e-3 and config.train.lr != 3e-3  # a new config
    assert overrides.override(config, "seeds", [4, 5]).seeds == (4, 5)
    assert overrides.override(config, "seeds", 4).seeds == (4,)
    with pytest.raises(ValueError, match="no field 'step'; its fields: steps"):
        overrides.override(config, "train.step", 3)
    with pytest.raises(ValueError, match="finite|>= 0|lr"):
        overrides.override(config, "train.lr", -1.0)  # the config's own check


def test_a_shipped_config_is_found_and_a_changed_one_is_not():
    config = experiments.experiment_config("teacher-identification-chosen", "quick")
    assert recorded_match(config) == "teacher-identification-chosen-quick"
    assert recorded_match(overrides.override(config, "train.steps", 7)) is None


def test_run_loads_a_recorded_run_and_lists_the_presets(capsys):
    assert cli.main(["run", "teacher-identification-chosen", "--profile", "quick"]) == 0
    out = capsys.readouterr().out
    assert "loaded the recorded run teacher-identification-chosen-quick" in out
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "identify" in out and "optimiser-comparison-new-seeds" in out


def test_run_trains_with_overrides_into_the_users_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))
    argv = ["run", "teacher-identification", "--profile", "smoke", "--steps", "10"]
    assert cli.main([*argv, "--set", "train.log_every=5", "--set", "train.chunk_steps=5"]) == 0
    out = capsys.readouterr().out
    assert f"entry {tmp_path}" in out and "final_train_loss" in out
    with pytest.raises(SystemExit):
        cli.main([*argv, "--set", "nope"])
    assert "FIELD=VALUE" in capsys.readouterr().err


def test_the_overall_progress_line_counts_jobs_and_estimates_the_rest():
    line = overall_progress(2, 5, 2, 120.0)
    assert line.startswith("jobs 2/5 done") and "2.0 min so far" in line
    assert "about 3.0 min left" in line
    assert "about 6.0 min left" in overall_progress(2, 5, 1, 120.0)  # one ran here, one resumed


def test_list_gives_one_line_of_description_per_experiment(capsys):
    from gated_attention.experiments.registry import DESCRIPTIONS, EXPERIMENTS

    assert set(DESCRIPTIONS) == set(EXPERIMENTS)
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in EXPERIMENTS:
        line = next(x for x in out.splitlines() if x.split() and x.split()[0] == name)
        assert DESCRIPTIONS[name] in line


def test_run_ends_with_one_row_per_member(capsys):
    assert cli.main(["run", "how-many-neurons-A", "--profile", "quick"]) == 0
    out = capsys.readouterr().out
    head = next(x for x in out.splitlines() if x.split()[:3] == ["member", "size", "seed"])
    assert "final_train_loss" in head and "eval_loss" in head
    rows = out[out.index(head) :].splitlines()[2:]
    assert sum(1 for r in rows if r.split() and r.split()[0].isdigit()) == 18  # 6 sizes x 3


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["run", "no-such-experiment"], "'no-such-experiment' is not one of"),
        (["run", "teacher-identification", "--profile", "huge"], "'huge' is not one of"),
        (["run", "teacher-identification", "--steps", "0"], "0 is not in the range x>=1"),
        (["nope"], "No such command 'nope'"),
    ],
)
def test_a_usage_error_is_one_line_and_status_2(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and words in err, err
