"""The printed summaries of the associative recall chapter (report/recall_summaries.py)."""

from types import SimpleNamespace

import pytest
import torch

from gated_attention.constructions import recall_networks as cr
from gated_attention.experiments import associative_recall_config
from gated_attention.report import recall_summaries as rs
from gated_attention.report import verdict


@pytest.fixture(scope="module")
def smoke():
    config = associative_recall_config("smoke")
    return config, config.evaluation_batch()


def test_the_setup_names_both_budgets(smoke, capsys):
    config, _ = smoke
    rs.print_setup("smoke", config)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "profile: smoke; N_k = 4 keys, N_v = 4 values, T = 5 steps"
    assert lines[2].startswith(f"training: {config.train.steps:,} steps of batch")
    assert lines[3].startswith(f"cross-entropy ablation: sizes {config.ce_sizes}")


def test_planted_networks_read_as_attention_or_squared_difference(smoke, capsys):
    config, batch = smoke
    K, V = config.task.n_keys, config.task.n_values
    planted = {
        "naive attention, side": cr.attention_rnn(K, V, side=True),
        "squared difference, io": cr.squared_difference_rnn(K, V),
    }
    rs.print_planted(planted, config.task, batch)
    header, naive, sd = capsys.readouterr().out.splitlines()
    assert header.split() == ["n", "accuracy", "Score", "KV", "R2_SD", "rank", "1", "neg", "peak"]
    assert naive.split()[-6:] == ["16", "1.00", "0.00", naive.split()[-3], "1.00", "0.33"]
    assert float(sd.split()[-3]) == pytest.approx(1.0, abs=0.01)  # R2_SD of the SD network
    assert float(sd.split()[-4]) > 0.5  # its Score KV: M is not readable from it


def test_gating_rows_use_the_loss_of_each_gating(monkeypatch, capsys):
    monkeypatch.setattr(rs, "format_rows", lambda rows, loss: f"{len(rows)} rows, {loss}")
    rs.print_gating_rows({"io": [1, 2], "io-ce": [3]}, ["io", "io-ce"])
    out = capsys.readouterr().out
    assert out == (
        "input-output gating:\n2 rows, MSE\n\ninput-output, cross-entropy:\n1 rows, CE\n\n"
    )


def test_side_seeds_read_the_largest_members_only(capsys):
    config = SimpleNamespace(
        task=SimpleNamespace(n_keys=4, n_values=4),
        sizes=(4, 8),
        seeds=(0, 1),
        largest=lambda gating: [2, 3],
    )

    def member(kept, low):
        blocks = SimpleNamespace(
            rank1=torch.tensor([low, 1.0, 1.0]), negative_peak=torch.tensor([0.5, 1.0, 0.0])
        )
        values = SimpleNamespace(kv=[0, 1])
        return SimpleNamespace(
            pruned=SimpleNamespace(net=SimpleNamespace(n=kept)), values=values, blocks=blocks
        )

    rs.print_side_seeds(config, [None, None, member(7, 0.9), member(6, 0.8)])
    first, seed0, seed1 = capsys.readouterr().out.splitlines()
    assert first == "of n = 8; naive attention needs 16, any exact network 10"
    assert seed0 == "seed 0: 7 kept (2 key-value); rank 1: lowest 0.900; -min/max: mean 0.75"
    assert seed1.startswith("seed 1: 6 kept (2 key-value); rank 1: lowest 0.800")


def test_records_carry_the_configs_seeds_and_budget(smoke, tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path))  # the record is written there
    config, _ = smoke
    values = {"appD3.side_accuracy": (1.0, "a note")}
    (row,) = rs.recall_records(values, config, profile="smoke")
    assert row.id == "appD3.side_accuracy" and row.ours == 1.0
    assert row.seeds == len(config.seeds) and row.note.endswith("a note")
    steps = config.train.steps
    assert row.budget == verdict.budget("appD3", steps=steps, seeds=len(config.seeds))


def test_io_fits_read_the_members_of_one_size(capsys):
    config = SimpleNamespace(members=lambda gating: [(0, 4), (1, 4), (0, 6), (1, 6)])

    def member(acc, r2):
        fit = SimpleNamespace(r2=r2, code=torch.tensor([0.5, -0.25]))
        return SimpleNamespace(accuracy=acc, sd_fit=fit)

    analyses = [member(0.1, 0.2), member(0.3, 0.4), member(0.5, 0.999), member(0.75, 0.5)]
    loss = torch.tensor([0.9, 0.8, 0.125, 0.1])
    rs.print_io_fits(config, analyses, loss, 6)
    head, seed0, seed1 = capsys.readouterr().out.splitlines()
    assert head == "input-output gating, n = m = 6, squared error: the fit per seed"
    assert seed0 == "seed 0: accuracy 0.50, MSE 0.125, R2_SD 0.999, code [0.5, -0.25]"
    assert seed1.startswith("seed 1: accuracy 0.75, MSE 0.100")
