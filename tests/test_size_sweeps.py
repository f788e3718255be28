"""Fig. 3A/B read from a sweep: the loss edge (``readings.fig3_edges``, its rows
``readings.fig3_rows``) and the per-seed reading, ours (``readings.fig3_learned``), each the
chapter's estimator, with its rows; the finding's rows (``readings.fig3_map``)."""

import dataclasses

import numpy as np
import pytest
import torch

from gated_attention import analysis
from gated_attention import experiments as ex
from gated_attention.readings import fig3_edges, fig3_learned, fig3_map, fig3_rows
from gated_attention.readings.fig3_learned import read_sweep
from gated_attention.readings.sweep_losses import normalised_losses
from gated_attention.report import scorecard, verdict

#: each claim's paper budget, as the chapters pass it to ``fig3_map.finding_rows``
PAPER = {c.id: c.paper_budget for c in verdict.claims()}


@pytest.fixture
def sweep_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path / "build"))
    monkeypatch.setattr(scorecard, "_SESSION", [])
    return ex.run(ex.how_many_neurons_config("smoke", "A"), progress=False)


def test_the_edge_reads_the_normalised_losses(sweep_run):
    c = sweep_run.config
    s = fig3_edges.from_teacher(sweep_run, "hmn-test")
    sizes, L = normalised_losses(c, sweep_run.tensors["eval_loss"])
    np.testing.assert_array_equal(s.sizes, sizes)
    np.testing.assert_array_equal(s.excess, L)
    assert (s.panel, s.construction, s.spent) == ("A", 14, c.train.steps * c.T)
    rows = fig3_rows.edge_rows(s)
    assert [r.id for r in rows] == ["fig3a.edge_at_1e-2", "fig3a.edge", "fig3a.edge_at_1e-6"]
    assert all(r.run == "hmn-test" for r in rows)
    assert rows[1].interval is not None and rows[0].interval is None
    budget = verdict.budget(s.claim, steps=s.steps, T=s.T, seeds=s.seeds)
    assert budget.startswith(f"{c.train.steps:,} steps") and f"T = {c.T}" in budget
    for r, (L, e) in zip(rows, s.edges().items(), strict=True):
        assert e == analysis.loss_edge(sizes, s.excess, L, 14)
        assert np.isnan(r.ours) == (e.estimate is None)
    records = [scorecard.record(**vars(r), profile="paper", budget=budget) for r in rows]
    assert [x.id for x in records] == [r.id for r in rows]
    assert all(x.run == "hmn-test" and x.budget == budget for x in records)


def test_a_sweep_s_rows_give_each_size_and_each_level():
    s = _sweep("A", 20, "a")  # sizes 8, 14, 20, 28
    sizes = fig3_edges.size_rows(s)
    assert [r.n for r in sizes] == [8, 14, 20, 28]
    assert [r.median for r in sizes] == pytest.approx([1e-1, 1e-1, 1e-5, 1e-5])
    assert all(r.still is None for r in sizes)  # not known
    levels = fig3_edges.level_rows(s)
    assert [r.central for r in levels] == [False, True, False]
    assert [r.edge for r in levels] == [20, 20, None]  # 1e-5 is above 1e-6
    assert levels[1].ratio == pytest.approx(20 / 14) and np.isnan(levels[2].ratio)


def test_the_per_seed_reading_is_the_chapters(sweep_run, monkeypatch):
    c = sweep_run.config
    seen = []
    real = fig3_learned.sweep_success
    monkeypatch.setattr(
        fig3_learned, "sweep_success", lambda run, x: seen.append(x) or real(run, x)
    )
    r = read_sweep(sweep_run)
    # Score KV on the chapter's inputs: 256 sequences of seed 7
    torch.testing.assert_close(seen[0], analysis.gaussian_inputs(c.d, c.T, 256, seed=7))
    f = real(sweep_run, seen[0])[1]
    assert r.learned.estimate == f.estimate and list(r.learned.k) == list(f.k)
    assert r.panel == "A" and r.claim == "fig3a"
    rows = fig3_learned.learned_rows(r)
    assert [x.n for x in rows] == list(c.sizes) and rows[0].k == f.k[0] and rows[0].R == f.R
    assert all(x.kv_min <= x.kv_max for x in rows)
    (row,) = fig3_learned.score_rows(r, run="hmn-test")
    assert row.id == "fig3a.transition_learned" and row.run == "hmn-test"
    assert row.note.startswith("learned per size: ") and row.seeds == f.R


def _sweep(panel, edge_at, run):
    """A sweep whose median excess is 1e-1 below ``edge_at`` and 1e-5 from it on."""
    sizes = {"A": [8, 14, 20, 28], "B": [24, 42, 63, 84], "C": [8, 12, 16, 24]}[panel]
    E = np.where(np.array(sizes)[:, None] >= edge_at, 1e-5, 1e-1) * np.ones((4, 3))
    return fig3_edges.Sweep(panel, np.array(sizes), E, 1000, 32 if panel != "C" else None, run)


def test_the_finding_rows_give_each_setting_its_edge_interval_and_budget():
    ones = {"A": _sweep("A", 14, "a"), "B": _sweep("B", 42, "b"), "C": _sweep("C", 16, "c")}
    ones["A-wd"] = dataclasses.replace(_sweep("A", 20, "wd"), setting="lr 1e-2, wd 0.07")
    rows = fig3_map.finding_rows(ones, PAPER)
    assert [r.panel for r in rows] == ["A", "A", "B", "C"]  # the order of SETTINGS
    assert [r.ratio for r in rows] == pytest.approx([1.0, 20 / 14, 1.0, 16 / 12])
    assert rows[1].interval == pytest.approx((20 / 14, 20 / 14))  # every seed alike
    assert rows[0].share == pytest.approx(1000 / 1_000_000)  # steps x T over the paper's
    assert rows[3].share == pytest.approx(1000 / 300_000)  # C at the task's own T
    assert rows[0].students == 12 and rows[0].still is None
    assert fig3_map.span(rows, "A") == pytest.approx((1.0, 20 / 14))
    none = fig3_map.finding_rows({"A": _sweep("A", 99, "a")}, PAPER)
    assert np.isnan(none[0].ratio) and none[0].interval == (None, None)


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

    def score(s, row):
        (values,) = fig3_rows.robust_rows(s, row)
        return scorecard.record(**vars(values), profile="paper")

    held = score(_sweep("A", 14, "how-many-neurons-A-cpu-wd"), "wd")
    assert held.id == "fig3.robust.wd" and held.ours == 1.0 and held.status == "pass"
    moved = score(_sweep("A", 20, "how-many-neurons-A-cpu-lr"), "lr")
    assert moved.ours == pytest.approx(20 / 14) and moved.status == "miss"
    with pytest.raises(ValueError, match="not a row"):
        fig3_rows.robust_rows(_sweep("B", 42, "b"), "wd")
    with pytest.raises(ValueError, match="not a row"):
        fig3_rows.robust_rows(_sweep("A", 14, "t"), "teacher-fine")  # no fine sweep
    fine = score(_sweep("A", 19, "a + how-many-neurons-A-cpu-wd-fine"), "wd-fine")
    assert fine.id == "fig3.robust.wd-fine" and fine.run == "how-many-neurons-A-cpu-wd-fine"
    assert fine.interval == pytest.approx([20 / 14, 20 / 14])  # every seed alike


def test_setup_rows_give_each_panel_beside_the_paper_profile():
    configs = {p: ex.how_many_neurons_config("quick", p) for p in "AB"}
    papers = {p: ex.how_many_neurons_config("paper", p) for p in "AB"}
    a, b = fig3_learned.setup_rows(configs, papers)
    A, B = configs["A"], configs["B"]
    assert (a.panel, a.d, a.rank, a.T, a.sizes) == ("A", 4, 4, A.T, tuple(A.sizes))
    assert (b.panel, b.d, b.rank, b.T) == ("B", 12, B.teacher_rank, B.T)
    assert (a.seeds, a.steps, a.lr, a.weight_decay) == (
        len(A.seeds),
        A.train.steps,
        A.train.lr,
        A.train.weight_decay,
    )
    assert (a.paper_seeds, a.paper_steps) == (
        len(papers["A"].seeds),
        papers["A"].train.steps,
    )


def test_our_settings_do_not_decide_a_row_when_fig3a_s_settings_disagree():
    ours = dataclasses.replace(_sweep("A", 14, "a"), setting=fig3_rows.OURS)
    moved = dataclasses.replace(_sweep("A", 20, "wd"), setting="lr 1e-2, wd 0.07")
    b = dataclasses.replace(_sweep("B", 42, "b"), setting=fig3_rows.OURS)
    runs = {"A": ours, "A-wd": moved, "B": b}
    premise = fig3_rows.settings_premise(ours, runs)
    assert premise.startswith("premise fails: the edge depends on our settings")
    assert "1.00x [1.00x, 1.00x] with lr 1e-2, wd 1e-4" in premise
    assert "1.43x [1.43x, 1.43x] with lr 1e-2, wd 0.07" in premise
    assert fig3_rows.settings_premise(b, runs) == premise  # B's sweep is at our settings too
    assert fig3_rows.settings_premise(moved, runs) == ""  # a row at another setting
    agree = dataclasses.replace(_sweep("A", 14, "wd"), setting="lr 1e-2, wd 0.07")
    assert fig3_rows.settings_premise(ours, {**runs, "A-wd": agree}) == ""  # both below
    assert fig3_rows.settings_premise(_sweep("C", 16, "c"), runs) == ""  # not Fig. 3A/B
    # below the band by its median, but one stuck seed of three lets the interval reach it
    spread = dataclasses.replace(_sweep("A", 14, "wd"), setting="lr 1e-2, wd 0.07")
    spread.excess[1, 0] = 1.0
    spread.excess[2, 0] = 1.0  # seed 0 reaches the level only from 28 = 2 x 14
    assert spread.edges()[1e-4].ratio == 1.0 and spread.interval()[1] == 2.0
    assert fig3_rows.settings_premise(ours, {**runs, "A-wd": spread}).startswith("premise")
    (central,) = [r for r in fig3_rows.edge_rows(ours, premise) if r.id == "fig3a.edge"]
    assert central.note.startswith(premise + "; n* = 14")


def test_the_finding_s_numbers_are_read_from_the_rows():
    runs = {"A": _sweep("A", 14, "a"), "B": _sweep("B", 42, "b"), "C": _sweep("C", 16, "c")}
    runs["A-wd"] = dataclasses.replace(_sweep("A", 20, "wd"), setting="lr 1e-2, wd 0.07")
    f = fig3_map.finding(fig3_map.finding_rows(runs, PAPER))
    assert (f.ab_lo, f.ab_hi) == pytest.approx((1.0, 20 / 14))
    assert f.a_settings["lr 1e-2, wd 0.07"] == pytest.approx(20 / 14)
    assert f.c_ratio == pytest.approx(16 / 12) and f.c_hi == pytest.approx(16 / 12)
    assert f.a_reach == pytest.approx(20 / 14) and f.ab_share == (0, 0)
    runs["A"].excess[:, 0] = 1.0  # a seed that never learns: some draws have no edge
    assert fig3_map.finding(fig3_map.finding_rows(runs, PAPER)).a_reach is None


def test_each_recorded_setting_of_fig3a_has_its_rows_and_both_modes_meet():
    from gated_attention.experiments.robustness import FINE, VARIANTS

    out = fig3_rows.robust_all(fig3_edges.largest())
    assert [v for v, _, _ in out] == list(VARIANTS)
    for v, s, rows in out:
        if s is None:
            assert rows == []
            continue
        fine = [f"fig3.robust.{v}-fine"] if " + " in s.run else []
        assert [r.id for r in rows] == [f"fig3.robust.{v}", *fine]
    for m in fig3_rows.mode_rows():
        assert m.variant in FINE and len(m.fast) == len(m.compiled) == m.seeds
        assert 0 <= m.same <= m.seeds
