"""Fig. 2's surplus against the budget (``readings.surplus_ladder``, its figure in
``report.teacher_plots``), on planted member rows."""

from types import SimpleNamespace

import pytest

from gated_attention.readings import teacher_scores as ts
from gated_attention.readings.surplus_ladder import Rung, ladder_rows, read_rungs
from gated_attention.readings.teacher_members import MemberRow
from gated_attention.report import scorecard, verdict
from gated_attention.report.teacher_plots import plot_surplus


def member(seed, hidden, lam_one=10, lam_zero=4, learned=True, merged=0):
    between = hidden - lam_one - lam_zero
    rev = SimpleNamespace(  # what seed_rows reads: nothing merged, a small distance
        merged=SimpleNamespace(groups=[], kept=[], net=None),
        groups=SimpleNamespace(one=[], zero=[]),
        poly_distance=1e-4 * seed,
    )
    return MemberRow(
        seed, hidden, lam_one, lam_zero, between, 4, 1e-6, 0, 0, learned, merged, rev, loss=1e-7
    )


@pytest.fixture
def build(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path))
    monkeypatch.setattr(scorecard, "_SESSION", [])


def rungs():
    quick = Rung("this build", 1000, 8, (member(3, 20, 14), member(4, 16, 12)))
    longer = Rung("ti-cpu", 8000, 8, (member(3, 14, merged=1), member(4, 15, 11, learned=False)))
    return [longer, quick]


def test_the_table_orders_rungs_by_steps_and_counts_the_surplus():
    first, second = ladder_rows(rungs())
    assert (first.steps, first.hidden, first.name) == (1000, (20, 16), "this build")
    assert (first.surplus, first.at14, first.learned, first.seeds) == (4.0, 0, 2, 2)
    assert (second.steps, second.surplus, second.at14, second.learned) == (8000, 0.5, 1, 1)
    assert list(rungs()[0].surplus) == [0, 1]


def test_the_figure_has_a_dot_per_seed_and_the_mean(build):
    fig = plot_surplus(rungs())
    ax = fig.axes[0]
    mean = [line for line in ax.get_lines() if line.get_label() == "mean"][0]
    assert list(mean.get_xdata()) == [1000, 8000] and list(mean.get_ydata()) == [4.0, 0.5]


def test_a_rung_is_scored_with_fig2_criteria_and_its_budget(build):
    rung = rungs()[0]
    paper = ts.paper_counts(scorecard.paper_values())
    budget = ts.seeds_budget(verdict.budget, rung.steps, rung.T, [r.seed for r in rung.rows])
    rows = {
        r.id: scorecard.record(**vars(r), profile="quick", run="ti-cpu", budget=budget)
        for r in ts.rung_rows(list(rung.rows), paper)
    }
    # the counts over both seeds (14 and 15): the median, not the first seed's 14
    hidden = rows["fig2.hidden_after_pruning"]
    assert (hidden.ours, hidden.interval, hidden.status) == (14.5, [14, 15], "miss")
    assert hidden.seeds == 2 and "1 of 2 seeds at the paper's 14" in hidden.note
    assert rows["fig2.lambda_one"].ours == 10.5
    assert rows["fig2.construction_counts_fraction"].ours == 0.5
    assert rows["fig2.learned_fraction"].ours == 0.5
    assert rows["fig2.merge_found"].ours == 1
    assert all(r.run == "ti-cpu" for r in rows.values())
    assert all(r.budget.endswith("; 2 seeds") for r in rows.values())
    assert rows["fig2.merge_found"].budget.startswith("8,000 steps")
    # Table 1 over both held-out seeds (their median), and App. C.2 over the seeds: no seed
    # has a merged group that is the construction's output neuron
    assert rows["table1.poly_distance_median"].ours == pytest.approx(3.5e-4)
    assert rows["table1.loss_median"].status == "pass"
    merged = rows["fig2.merged_is_output_neuron"]
    assert (merged.ours, merged.status) == (0.0, "miss")
    assert merged.note.startswith("0 of 2 seeds (none)")


def test_read_rungs_names_a_missing_rung():
    assert read_rungs(prune_tol=1e-3, names=("no-such-run",)) == ([], ["no-such-run"])
