"""Fig. 3A/B read from a sweep: the loss edge (``report.fig3_edges``) and the per-seed reading,
ours (``report.size_sweeps``), each the chapter's estimator, with its rows."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from gated_attention import analysis
from gated_attention import experiments as ex
from gated_attention.report import fig3_edges, fig3_map, scorecard, size_sweeps
from gated_attention.report.size_sweeps import (
    SweepReading,
    all_learn_from,
    read_sweep,
    reading_lines,
    reading_records,
)


@pytest.fixture
def sweep_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path / "build"))
    monkeypatch.setattr(scorecard, "_SESSION", [])
    return ex.run(ex.how_many_neurons_config("smoke", "A"), progress=False)


def test_the_edge_reads_the_normalised_losses(sweep_run):
    c = sweep_run.config
    s = fig3_edges.from_teacher(sweep_run, "hmn-test")
    sizes, L = ex.normalised_losses(c, sweep_run.tensors["eval_loss"])
    np.testing.assert_array_equal(s.sizes, sizes)
    np.testing.assert_array_equal(s.excess, L)
    assert (s.panel, s.construction, s.spent) == ("A", 14, c.train.steps * c.T)
    rows = fig3_edges.edge_records(s, profile="paper")
    assert [r.id for r in rows] == ["fig3a.edge_at_1e-2", "fig3a.edge", "fig3a.edge_at_1e-6"]
    assert all(r.run == "hmn-test" for r in rows)
    assert rows[1].budget.startswith(f"{c.train.steps:,} steps") and f"T = {c.T}" in rows[1].budget
    for r, (L, e) in zip(rows, s.edges().items(), strict=True):
        assert e == analysis.loss_edge(sizes, s.excess, L, 14)
        assert (r.ours is None) == (e.estimate is None)


def test_the_per_seed_reading_is_the_chapters(sweep_run, monkeypatch):
    c = sweep_run.config
    seen = []
    real = size_sweeps.sweep_success
    monkeypatch.setattr(size_sweeps, "sweep_success", lambda run, x: seen.append(x) or real(run, x))
    r = read_sweep(sweep_run)
    # Score KV on the chapter's inputs: 256 sequences of seed 7
    torch.testing.assert_close(seen[0], analysis.gaussian_inputs(c.d, c.T, 256, seed=7))
    f = real(sweep_run, seen[0])[3]
    assert r.learned.estimate == f.estimate and list(r.learned.k) == list(f.k)
    assert r.panel == "A" and r.spent == c.train.steps * c.T
    text = reading_lines(r)
    assert text.count("n = m =") == len(c.sizes) and f"{f.k[0]} of {f.R}" in text
    rows = reading_records(r, profile="paper", run="hmn-test")
    assert [x.id for x in rows] == ["fig3a.transition_learned"] and rows[0].run == "hmn-test"


def _reading(k, R=5, sizes=(8, 14, 20, 24)):
    learned = SimpleNamespace(k=list(k), R=R, estimate=14, sizes=list(sizes))
    return SweepReading("A", None, learned, np.zeros((len(sizes), R)))


def test_from_which_size_every_seed_learned():
    assert all_learn_from(_reading([0, 5, 5, 5])) == 14
    assert all_learn_from(_reading([0, 5, 4, 5])) == 24  # a miss at 20 breaks the run from 14
    assert all_learn_from(_reading([5, 5, 5, 4])) is None


def _sweep(panel, edge_at, run):
    """A sweep whose median excess is 1e-1 below ``edge_at`` and 1e-5 from it on."""
    sizes = {"A": [8, 14, 20, 28], "B": [24, 42, 63, 84], "C": [8, 12, 16, 24]}[panel]
    E = np.where(np.array(sizes)[:, None] >= edge_at, 1e-5, 1e-1) * np.ones((4, 3))
    return fig3_edges.Sweep(panel, np.array(sizes), E, 1000, 32 if panel != "C" else None, run)


def test_the_finding_table_gives_each_setting_its_edge_interval_and_budget():
    ones = {"A": _sweep("A", 14, "a"), "B": _sweep("B", 42, "b"), "C": _sweep("C", 16, "c")}
    ones["A-wd"] = dataclasses.replace(_sweep("A", 20, "wd"), setting="lr 1e-2, wd 0.07")
    rows = fig3_map.edge_rows(ones)
    assert [r.panel for r in rows] == ["A", "A", "B", "C"]  # the order of SETTINGS
    assert [r.ratio for r in rows] == pytest.approx([1.0, 20 / 14, 1.0, 16 / 12])
    assert rows[1].interval == pytest.approx((20 / 14, 20 / 14))  # every seed alike
    assert rows[0].share == pytest.approx(1000 / 1_000_000)  # steps x T over the paper's
    assert rows[3].share == pytest.approx(1000 / 300_000)  # C at the task's own T
    table = fig3_map.edge_table(rows)
    assert (
        "| Fig. 3A | lr 1e-2, wd 0.07 | 0% of the paper's | **1.43x** | 1.43x to 1.43x |" in table
    )
    assert fig3_map.span(rows, "A") == pytest.approx((1.0, 20 / 14))
    none = fig3_map.edge_rows({"A": _sweep("A", 99, "a")})
    assert np.isnan(none[0].ratio) and "no edge" in fig3_map.edge_table(none)


def test_a_fine_sweep_merges_with_its_coarse_run_paired_by_seed():
    coarse = _sweep("A", 20, "coarse")  # sizes 8, 14, 20, 28
    fine = fig3_edges.Sweep("A", np.array([16, 18, 19, 20]), np.full((4, 3), 1e-5), 1000, 32, "f")
    fine.excess[-1] = 1.0  # size 20 is read from the coarse run
    both = fig3_edges.merge(coarse, fine)
    assert both.sizes.tolist() == [8, 14, 16, 18, 19, 20, 28] and both.run == "coarse + f"
    assert both.excess[5].tolist() == coarse.excess[2].tolist()
    assert both.edges()[1e-4].estimate == 16  # the fine grid moves the edge down
    other = dataclasses.replace(fine, steps=2000)
    with pytest.raises(ValueError, match="not one setting"):
        fig3_edges.merge(coarse, other)


def test_a_variant_row_scores_the_central_edge(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path / "build"))
    monkeypatch.setattr(scorecard, "_SESSION", [])
    (held,) = fig3_edges.robust_records(_sweep("A", 14, "how-many-neurons-A-cpu-wd"), "wd")
    assert held.id == "fig3.robust.wd" and held.ours == 1.0 and held.status == "pass"
    (moved,) = fig3_edges.robust_records(_sweep("A", 20, "how-many-neurons-A-cpu-lr"), "lr")
    assert moved.ours == pytest.approx(20 / 14) and moved.status == "miss"
    with pytest.raises(ValueError, match="not a row"):
        fig3_edges.robust_records(_sweep("B", 42, "b"), "wd")
    with pytest.raises(ValueError, match="not a row"):
        fig3_edges.robust_records(_sweep("A", 14, "t"), "teacher-fine")  # no fine sweep
    (fine,) = fig3_edges.robust_records(
        _sweep("A", 19, "a + how-many-neurons-A-cpu-wd-fine"), "wd-fine"
    )
    assert fine.id == "fig3.robust.wd-fine" and fine.run == "how-many-neurons-A-cpu-wd-fine"
    assert fine.interval == pytest.approx([20 / 14, 20 / 14])  # every seed alike


def test_setup_text_gives_each_panel_two_lines_beside_the_paper_profile():
    from gated_attention import experiments
    from gated_attention.report.size_sweeps import setup_text

    configs = {p: experiments.how_many_neurons_config("quick", p) for p in "AB"}
    papers = {p: experiments.how_many_neurons_config("paper", p) for p in "AB"}
    lines = setup_text(configs, papers).splitlines()
    assert len(lines) == 4
    a, b = configs["A"], configs["B"]
    assert lines[0] == f"Fig. 3A: d = 4, teacher rank 4, T = {a.T}, n = m in {list(a.sizes)},"
    assert lines[2].startswith(f"Fig. 3B: d = 12, teacher rank {b.teacher_rank}, T = {b.T}")
    assert lines[1] == (
        f"  {len(a.seeds)} seeds, {a.train.steps:,} steps (paper profile: "
        f"{len(papers['A'].seeds)} seeds, {papers['A'].train.steps:,}), lr {a.train.lr:g}, "
        f"weight decay {a.train.weight_decay:g}"
    )


def test_our_settings_do_not_decide_a_row_when_fig3a_s_settings_disagree():
    ours = dataclasses.replace(_sweep("A", 14, "a"), setting=fig3_edges.OURS)
    moved = dataclasses.replace(_sweep("A", 20, "wd"), setting="lr 1e-2, wd 0.07")
    b = dataclasses.replace(_sweep("B", 42, "b"), setting=fig3_edges.OURS)
    runs = {"A": ours, "A-wd": moved, "B": b}
    premise = fig3_edges.settings_premise(ours, runs)
    assert premise.startswith("premise fails: the edge depends on our settings")
    assert "1.00x [1.00x, 1.00x] with lr 1e-2, wd 1e-4" in premise
    assert "1.43x [1.43x, 1.43x] with lr 1e-2, wd 0.07" in premise
    assert fig3_edges.settings_premise(b, runs) == premise  # B's sweep is at our settings too
    assert fig3_edges.settings_premise(moved, runs) == ""  # a row at another setting
    agree = dataclasses.replace(_sweep("A", 14, "wd"), setting="lr 1e-2, wd 0.07")
    assert fig3_edges.settings_premise(ours, {**runs, "A-wd": agree}) == ""  # both below
    assert fig3_edges.settings_premise(_sweep("C", 16, "c"), runs) == ""  # not Fig. 3A/B
    # below the band by its median, but one stuck seed of three lets the interval reach it
    spread = dataclasses.replace(_sweep("A", 14, "wd"), setting="lr 1e-2, wd 0.07")
    spread.excess[1, 0] = 1.0
    spread.excess[2, 0] = 1.0  # seed 0 reaches the level only from 28 = 2 x 14
    assert spread.edges()[1e-4].ratio == 1.0 and spread.interval()[1] == 2.0
    assert fig3_edges.settings_premise(ours, {**runs, "A-wd": spread}).startswith("premise")


def test_the_finding_s_numbers_are_read_from_the_rows():
    runs = {"A": _sweep("A", 14, "a"), "B": _sweep("B", 42, "b"), "C": _sweep("C", 16, "c")}
    runs["A-wd"] = dataclasses.replace(_sweep("A", 20, "wd"), setting="lr 1e-2, wd 0.07")
    said = fig3_map.numbers(fig3_map.edge_rows(runs))
    assert said["ab-lo"] == "1.00x" and said["ab-hi"] == "1.43x"
    assert said["A: lr 1e-2, wd 0.07"] == "1.43x" and said["c-ratio"] == "1.33x"
    assert said["a-reach"] == "1.43x" and said["ab-share"] == "0-0%"
    runs["A"].excess[:, 0] = 1.0  # a seed that never learns: some draws have no edge
    assert fig3_map.numbers(fig3_map.edge_rows(runs))["a-reach"] == "no edge"
