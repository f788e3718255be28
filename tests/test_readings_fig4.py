"""The readings of the Fig. 4A/B runs (readings/fig4_families, readings/fig4_runs) on planted
losses and on the recorded runs: the rate search, the summary at the largest target, the
rates, the seeds (the excluded ones flagged), the rows' notes and values before, and the
recorded runs with their rate searches."""

import math

import pytest
import torch

from gated_attention import experiments
from gated_attention.analysis.family_losses import Members, Row
from gated_attention.readings import fig4_families as fam
from gated_attention.readings import fig4_runs
from gated_attention.report import scorecard


def test_sweep_rows_give_each_familys_seed_mean_per_rate():
    sweep = experiments.architectures_sweep_config("smoke", "teacher")
    groups = sweep.groups()
    loss = torch.full((len(groups), len(sweep.seeds)), 0.5, dtype=torch.float64)
    loss[0, 0] = float("nan")  # a diverged seed counts as +inf
    rows = fam.sweep_rows(sweep, {"eval_loss": loss})
    assert len(rows) == len(sweep.families)
    assert list(rows[0]) == ["family", *sweep.lr_grid]
    assert groups[0][0] == sweep.families[0]
    assert rows[0][groups[0][2]] == math.inf and rows[0]["family"] == "gated RNN (diagonal)"
    assert rows[1][sweep.lr_grid[0]] == 0.5


def test_summary_rates_and_falls_read_the_largest_target():
    c = experiments.architectures_config("smoke", "teacher")
    G, E = len(c.groups()), len(c.seeds)
    loss = torch.arange(G * E, dtype=torch.float64).reshape(G, E)
    tensors = {
        "eval_loss": loss,
        "widths": torch.arange(G) + 3,
        "counts": torch.arange(G) + 100,
        "step_time": torch.full((G,), 0.002),
        "train_curves": torch.ones(G, 10, E, dtype=torch.float64),
    }
    rows = fam.summary_rows(c, tensors)
    top = [k for k, g in enumerate(c.groups()) if g[1] == max(c.targets)]
    assert len(rows) == len(top) == len(c.families)
    k = top[0]
    assert (rows[0].width, rows[0].count, rows[0].lr) == (k + 3, k + 100, c.groups()[k][2])
    assert rows[0].mean == pytest.approx(float(loss[k].mean()))
    assert rows[0].range == (float(loss[k].min()), float(loss[k].max()))
    assert rows[0].ms_per_step == pytest.approx(2.0)
    grid = experiments.architectures_sweep_config("smoke", "teacher").lr_grid
    lrs = [(f, max(grid) if f == "gru" else min(grid)) for f in c.families]
    sweep = experiments.architectures_sweep_config("smoke", "teacher")
    rates = {r.family: r for r in fam.rate_rows(sweep, lrs)}
    assert rates["GRU"].at_top and not rates["LSTM"].at_top
    assert [r.fall for r in fam.fall_rows(c, tensors)] == pytest.approx([0.0] * len(c.families))


def test_member_rows_flag_the_excluded_seeds_and_scale_the_losses():
    ms = {"gru": Members("gru", 4000, (0.5, 2.0, 0.7), (False, False, False), (False, True, False))}
    (row,) = fam.member_rows(ms, 0.5, why="worse than predicting zero")
    assert (row.key, row.family) == ("gru", "GRU")
    assert row.seeds == ((1.0, False), (4.0, True), (1.4, False))
    assert row.excluded == "1 of 3 worse than predicting zero" and (row.kept, row.n) == (2, 3)
    assert row.median == pytest.approx(1.2) and row.mean_all == pytest.approx(3.2 / 1.5)


def entries():
    return scorecard.paper_values()


def test_scored_rows_say_when_the_seeds_cannot_decide_and_keep_the_value_before():
    rows = {
        "fig4a.gated_below_lstm": Row(0.05, "gated / lstm", (0.04, 0.2)),  # straddles 0.1
        "fig4a.gated_below_gru": Row(0.05, "gated / gru", (0.04, 0.09)),
        "fig4a.dense_vs_diagonal": Row(math.nan, "premise fails: dense learned on 0 of 3"),
    }
    before = {"fig4a.gated_below_lstm": 0.06, "fig4a.gated_below_gru": math.nan}
    before["fig4a.dense_vs_diagonal"] = 2.0
    out = fam.scored_rows(
        rows, seeds=3, entries=entries(), straddled=scorecard.straddled, run="x", before=before
    )
    lstm, gru, dense = out
    assert lstm.note == "gated / lstm; three seeds cannot decide: the interval straddles 0.1"
    assert (lstm.id, lstm.ours, lstm.seeds, lstm.run, lstm.before) == (
        "fig4a.gated_below_lstm",
        0.05,
        3,
        "x",
        0.06,
    )
    assert gru.note == "gated / gru" and gru.before is None  # NaN before: left out
    assert dense.before is None  # its premise fails today: left out
    assert fam.premise_fails(rows) == {"fig4a.dense_vs_diagonal": rows[dense.id].note}
    assert fam.cannot_decide(out) == {
        "fig4a.gated_below_lstm": "three seeds cannot decide: the interval straddles 0.1"
    }


def test_the_recorded_runs_are_read_with_their_rate_searches():
    assert fig4_runs.teacher_run("no-such-run") is None
    assert fig4_runs.search_minutes("no-such-run") is None
    longer = fig4_runs.teacher_run("architectures-teacher-cpu")
    assert longer.search.config.name == f"{longer.config.name}-lr"  # recorded as ...-lr-cpu
    assert longer.rows["fig4a.mlp_fails_like_lstm_gru"].value == pytest.approx(0.222, abs=1e-3)
    assert longer.before["fig4a.mlp_fails_like_lstm_gru"] == pytest.approx(0.287, abs=1e-3)
    assert len(longer.members["lru"].kept) == 2
    run = experiments.recorded("architectures-teacher-lr-cpu")
    minutes = fig4_runs.search_minutes("architectures-teacher-lr-cpu")
    assert minutes == run.meta["wall_time_s"] / 60
    longer = fig4_runs.regression_run("architectures-regression-cpu", 7 / 74, 14 / 74, 1.05)
    assert longer.rows["fig4b.lstm_below_gd"].value == pytest.approx(1.152, abs=1e-3)
    assert longer.before["fig4b.lstm_below_gd"] == pytest.approx(1.156, abs=1e-3)
    assert len(longer.members["gru"].kept) == 1
