"""Verdicts come from the rows alone: central rows decide, budgets are stated, report rows never
pass, and every claim of paper_values.json names rows that exist."""

import pytest

from gated_attention.report import budget_text, scorecard, verdict


def _claim(claim_id):
    return next(c for c in verdict.claims() if c.id == claim_id)


def test_every_claim_names_existing_rows_and_a_known_chapter():
    ids = set(scorecard.paper_values())
    for c in verdict.claims():
        assert set(c.central) <= ids and set(c.rows) <= ids, c.id
        assert all(c.has(i) for i in c.central), c.id
        chapters = {
            ch for i in c.central + c.rows for ch in scorecard.paper_values()[i]["chapters"]
        }
        assert not (c.central or c.rows) or c.chapter in chapters, c.id
    # every row belongs to exactly one claim
    for i in ids:
        owners = [c.id for c in verdict.claims() if c.has(i)]
        assert len(owners) == 1, (i, owners)


def test_the_gru_claim_is_the_papers_and_ours_is_apart():
    gru = _claim("gru")
    assert "cannot" in gru.claim and "any depth" in gru.claim
    # no exact construction; ours, a two-layer small-weight limit, beside it and not scored
    assert gru.ours.startswith("no exact construction; a two-layer small-weight limit exists")
    assert gru.central == () and "refute" not in gru.ours
    assert "GRU" not in _claim("table3").claim


def test_status_needs_every_central_row(build):
    fig2 = _claim("fig2")
    rec = scorecard.record
    counts = [
        rec("fig2.hidden_after_pruning", 14, profile="quick"),
        rec("fig2.lambda_one", 10, profile="quick"),
        rec("fig2.lambda_zero", 4, profile="quick"),
        rec("fig2.construction_counts_fraction", 1.0, profile="quick"),
    ]
    assert verdict.status(fig2, counts[1:]) == "partly"  # a central row not measured
    assert verdict.status(fig2, counts) == "reproduced"
    # merging is a claim of its own (App. C.2): "some group merges" does not decide it
    fig2c = _claim("fig2c")
    merged = rec("fig2.merge_found", 2, profile="quick")
    assert verdict.status(fig2, [*counts, merged]) == "reproduced"
    assert verdict.status(fig2c, [merged]) == "not scored"
    output = rec("fig2.merged_is_output_neuron", 1.0, profile="quick")
    assert verdict.status(fig2c, [merged, output]) == "reproduced"
    # a passing supporting row does not make a claim partly reproduced
    support = rec("fig2.learned_fraction", 1.0, profile="quick")
    misses = [rec("fig2.hidden_after_pruning", 20, profile="quick"), support]
    assert verdict.status(fig2, misses) == "not"
    assert verdict.status(fig2, []) is None
    only_report = [rec("sec5.loss_gap_se", 0.01, profile="quick")]
    assert verdict.status(_claim("sec5"), only_report) == "not scored"


def test_report_rows_never_pass(build):
    r = scorecard.record("table3.gru", 1e-3, profile="quick")
    assert r.status == "report"
    assert scorecard.collect("quick")[0].status == "report"


def test_budget_states_the_fraction_of_the_papers_steps_times_T():
    text = verdict.budget("fig2", steps=10_000, T=8, seeds=5)
    # 10,000 x 8 of 1,000,000 x 32: a quarter of the 1% the steps alone would say
    assert text == (
        "10,000 steps at T = 8: 0.25% of the paper's 1,000,000 steps at T = 32 (steps x T); 5 seeds"
    )
    assert ": 100% of" in verdict.budget("fig2", steps=1_000_000, T=32)
    assert "1.5%" not in verdict.budget("fig2", steps=15_000, T=8)
    assert ": 0.38% of" in verdict.budget("fig2", steps=15_000, T=8)
    # no T given: the task's T is the paper's (Sec. 5), said so
    sec5 = verdict.budget("sec5", steps=1_200)
    assert sec5 == "1,200 steps: 0.4% of the paper's 300,000 steps at the same T = 12 (steps x T)"
    # the text reads back as steps x T, the row's own T first
    assert budget_text.budget_size(text) == 80_000 and budget_text.budget_size(sec5) == 14_400
    assert "no step count" in verdict.budget("appD3", steps=100)
    with pytest.raises(KeyError, match="unknown claim"):
        verdict.budget("fig9", steps=1)
    with pytest.raises(ValueError, match="steps must be"):
        verdict.budget("fig2", steps=-1)


def test_exact_rows_say_so(build):
    r = scorecard.record("construction.full.max_error", 1e-15, profile="quick")
    assert r.budget == scorecard.EXACT_BUDGET
    trained = scorecard.record("fig2.lambda_one", 10, profile="quick", budget="3 steps")
    assert trained.budget == "3 steps"


def test_block_is_generated_from_the_rows(build):
    b = verdict.budget("fig2", steps=3_000, T=8, seeds=5)
    scorecard.record("fig2.hidden_after_pruning", 20, profile="quick", budget=b)
    scorecard.record("fig2.lambda_one", 9, profile="quick", budget=b)
    scorecard.record("fig2.lambda_one", 11, profile="paper", run="ti-gpu", budget="1,000,000 steps")
    rows = scorecard.session_records()
    build_rows = [r for r in rows if not r.run]
    text = verdict.block(build_rows, [r for r in rows if r.run], "quick")
    # one headline: the status at the largest budget and what decides it
    assert (
        "**Not reproduced** at the largest budget measured, `ti-gpu`: 1,000,000 steps. "
        "Deciding: hidden neurons with lam > 0.99 11 (paper 10) ✗ (0 of 4 central rows pass, "
        "3 not measured here)." in text
    )
    # every budget in a folded table below it
    assert ":::{dropdown} Every budget (2)" in text
    assert "- this build (quick): 3,000 steps at T = 8: 0.075% of the paper's" in text
    assert "hidden neurons after lossless pruning (d = 4) 20 (paper 14) ✗" in text
    assert "**The paper:** Gradient descent finds the construction" in text
    # how the rows measured at both budgets moved, the status change with them
    assert "From this build to `ti-gpu`: hidden neurons with lam > 0.99 9 ✗ → 11 ✗." in text
    # a changed row changes the block: it cannot drift from the numbers
    scorecard.record("fig2.hidden_after_pruning", 14, profile="quick", budget=b)
    again = verdict.block([r for r in scorecard.session_records() if not r.run], [], "quick")
    assert "**Partly reproduced** at this build (quick)" in again
    assert "Every budget" not in again  # one budget: no table


def test_a_claim_that_flips_with_the_budget_says_so(build):
    scorecard.record("fig3a.edge", 4, profile="quick")
    scorecard.record("fig3a.edge", 2, profile="paper", run="fig3a-cpu")
    rows = scorecard.session_records()
    text = verdict.block([r for r in rows if not r.run], [r for r in rows if r.run], "quick")
    assert "From this build to `fig3a-cpu`:" in text
    assert "4 ✗ → 2 ✓ (not → reproduced)." in text
    # no row at both budgets: nothing moved
    claim = _claim("fig3a")
    assert verdict.moved(claim, [], [r for r in rows if r.run], "fig3a-cpu") is None


def test_glue_block_refuses_a_chapter_without_rows(build):
    with pytest.raises(ValueError, match="recorded no scorecard row"):
        verdict.glue_block("quick")


def test_a_claim_of_ours_holds_rather_than_reproduces(build):
    r = scorecard.record("beyond.compressed_output.neurons_d4", 10, profile="quick")
    text = verdict.block([r], [], "quick")
    assert "**Ours, beyond the paper:**" in text and "**Partly holds**" in text
    assert "reproduced" not in text.lower()


def test_the_largest_recorded_budget_decides_the_recorded_status(build):
    from gated_attention.report import scorecard_page

    small = verdict.budget("fig3a", steps=100_000, T=32, seeds=5)  # 3.2e6 step x T
    big = verdict.budget("fig3a", steps=1_000_000, T=8, seeds=5)  # 8e6: larger
    scorecard.record("fig3a.edge", 2, profile="paper", run="a-cpu", budget=small)
    scorecard.record("fig3a.edge", 4, profile="paper", run="a-long", budget=big)
    rows = [r for r in scorecard.session_records() if r.run]
    run, its = verdict.largest(_claim("fig3a"), rows)
    assert run == "a-long" and [r.ours for r in its] == [4]
    assert verdict.largest(_claim("fig2"), rows) is None
    scorecard.record("fig3a.edge", 3.5, profile="quick")
    text = verdict.block([r for r in scorecard.session_records() if not r.run], rows, "quick")
    assert "**Not reproduced** at the largest budget measured, `a-long`: 1,000,000" in text
    assert "- `a-cpu`: 100,000 steps" in text and "5 seeds: **Reproduced**;" in text
    assert "From this build to `a-long`" in text and "From this build to `a-cpu`" not in text
    intro = scorecard_page.summary_html([], rows, "quick")
    # the status of the larger budget (a miss), not of the passing smaller one, with its budget
    assert "&#10007; not</span><br><small>a-long: 1,000,000 steps" in intro


def test_a_claim_scored_in_two_chapters_reads_its_status_where_it_is_stated(build):
    claim = _claim("construction")
    split = {"construction.full.max_error": 1e-15, "construction.sympy_difference": 0}
    rows = {i: scorecard.record(i, v, profile="quick") for i, v in split.items()}
    others = [
        scorecard.score(i, v, profile="quick")
        for i, v in (
            ("construction.symmetric.max_error", 1e-15),
            ("construction.low_rank.max_error", 1e-15),
            ("construction.side.max_error", 1e-15),
            ("construction.symmetric.neurons_d4", 14),
            ("construction.low_rank.neurons_d12_r6", 42),
        )
    ]
    # the chapter that states the claim counts the rows the other chapter stored: all pass
    text = verdict.block(list(rows.values()), [], "quick", chapter=claim.chapter, others=others)
    assert "**Reproduced**" in text and "not measured" not in text
    # without them, it reads partly; the other chapter gives no status of its own
    assert "**Partly reproduced**" in verdict.block(list(rows.values()), [], "quick")
    text = verdict.block(others, [], "quick", chapter="compressions")
    assert "Rows of this chapter" in text and "in the chapter construction" in text
    assert "Reproduced" not in text and "Partly" not in text


def test_a_row_without_training_counts_at_every_budget(build):
    sec5 = _claim("sec5")
    gd = scorecard.record("sec5.gd_loss", 0.0946, profile="quick")  # no training: budget exact
    run = [
        scorecard.record("sec5.rnn_loss", 0.0946, profile="paper", run="r"),
        scorecard.record("sec5.loss_gap_rel", 0.001, profile="paper", run="r"),
    ]
    assert verdict.status(sec5, run) == "partly"
    assert verdict.status(sec5, verdict.with_budget_free(run, [gd])) == "reproduced"
    assert "- `r`: **Reproduced**;" in verdict.block([gd], run, "quick")


def test_moved_reads_from_the_smaller_budget_to_the_larger(build):
    fig3a = _claim("fig3a")
    small = verdict.budget("fig3a", steps=1_000, T=8, seeds=3)
    big = verdict.budget("fig3a", steps=100_000, T=32, seeds=5)
    quick = [scorecard.record("fig3a.edge", 2.0, profile="quick", budget=small)]
    cpu = [scorecard.record("fig3a.edge", 1.0, profile="paper", run="cpu", budget=big)]
    assert verdict.moved(fig3a, quick, cpu, "cpu") == (
        "From this build to `cpu`: loss edge n*/14 (the construction's count), at excess "
        "loss 1e-4 2 ✓ → 1 ✗ (reproduced → not)."
    )
    # a recorded run smaller than the build: read from the run to the build
    tiny = [scorecard.record("fig3a.edge", 1.0, profile="paper", run="tiny", budget=small)]
    bigger = [scorecard.record("fig3a.edge", 2.0, profile="quick", budget=big)]
    assert verdict.moved(fig3a, bigger, tiny, "tiny").startswith(
        "From `tiny` to this build: loss edge"
    )
    assert verdict.moved(fig3a, bigger, tiny, "tiny").endswith("1 ✗ → 2 ✓ (not → reproduced).")


def test_a_reference_of_ours_is_what_the_verdict_says_it_wants(build):
    s = scorecard.record("sec5.gd_loss", 0.0946, profile="quick")
    assert "want within 1% of 0.0946 (ours)" in verdict.block([s], [], "quick")


def test_the_budget_named_is_that_of_the_rows_that_decide(build):
    one = verdict.budget("table1", steps=1_000, T=32, seeds=1)
    every = verdict.budget("table1", steps=1_000, T=32, seeds=3)
    rows = [
        scorecard.record("table1.loss", 1e-6, profile="paper", run="r", budget=one),
        scorecard.record("table1.loss_median", 1e-6, profile="paper", run="r", budget=every),
    ]
    assert verdict.spent_on(_claim("table1"), rows).endswith("; 3 seeds")
    assert (
        "1,000 steps at T = 32: 0.1% of the paper's 1,000,000 steps at T = 32 (steps x T); 3 seeds"
        in verdict.block([], rows, "quick")
    )


def test_variant_runs_at_one_budget_are_one_budget_of_their_claim(build):
    robust = _claim("fig3.robust")
    b = verdict.budget("fig3.robust", steps=100_000, T=32, seeds=5)
    rows = [
        scorecard.record("fig3.robust.wd", 1.43, profile="paper", run="v-wd", budget=b),
        scorecard.record("fig3.robust.teacher", 1.0, profile="paper", run="v-teacher", budget=b),
    ]
    run, its = verdict.largest(robust, rows)
    assert run == "v-wd, v-teacher" and len(its) == 2
    text = verdict.block([], rows, "quick")
    assert (
        "**Does not hold** at `v-wd`, `v-teacher`: 100,000 steps" in text
    )  # every: one miss refutes
    assert "(1 of 6 central rows pass, 4 not measured here)" in text
    # a run that repeats a row stays apart (two budgets of one claim)
    again = scorecard.record("fig3.robust.wd", 1.0, profile="paper", run="v-wd-2", budget=b)
    assert len(verdict.runs_by_budget(robust, [*rows, again])) == 2


def test_a_chapter_reading_only_recorded_rows_of_a_claim_stated_elsewhere(build):
    # the surplus chapter scores Fig. 2's rows on recorded runs only: one line per run, no status
    rec = scorecard.record
    rows = [
        rec("fig2.hidden_after_pruning", 19, profile="quick", run="rung-x2"),
        rec("fig2.lambda_one", 12, profile="quick", run="rung-x2"),
    ]
    text = verdict.block([], rows, "quick", chapter="surplus_neurons")
    assert "the recorded run `rung-x2`" in text and "19" in text
    assert "is in the chapter teacher_identification" in text
    assert "**not" not in text and "**reproduced" not in text  # the status is stated there


def test_a_chapter_states_its_own_claims_first(build):
    rec = scorecard.record
    rows = [
        rec("fig2.lambda_one", 12, profile="paper", run="rung-x2"),
        rec("optim.adamw_keeps_surplus", 5, profile="paper", run="members"),
    ]
    text = verdict.block([], rows, "quick", chapter="surplus_neurons")
    assert text.index(_claim("optim").claim[:40]) < text.index("rung-x2")
    plain = verdict.block([], rows, "quick")  # no chapter: the paper's order
    assert plain.index("rung-x2") < plain.index(_claim("optim").claim[:40])


def test_a_row_whose_interval_straddles_its_threshold_is_left_open(build):
    fig3a = _claim("fig3a")
    b = verdict.budget("fig3a", steps=100_000, T=32, seeds=5)
    inside = scorecard.record(
        "fig3a.edge", 1.43, profile="paper", run="r", budget=b, interval=(1.0, 2.0)
    )
    assert scorecard.straddles(inside) == 1.414
    assert verdict.status(fig3a, [inside]) == "undecided"
    assert "the seeds cannot decide: its interval straddles 1.41" in verdict.block(
        [], [inside], "quick"
    )
    clear = scorecard.record(
        "fig3a.edge", 1.0, profile="paper", run="r", budget=b, interval=(1.0, 1.0)
    )
    assert scorecard.straddles(clear) is None and verdict.status(fig3a, [clear]) == "not"
    open_above = scorecard.record(
        "fig3a.edge", 2.0, profile="paper", run="r", budget=b, interval=(1.5, None)
    )
    assert scorecard.straddles(open_above) == 2.828  # no edge in some draws: open above


def test_an_undecided_top_budget_does_not_hide_a_smaller_budget_that_decides(build):
    b = verdict.budget("fig3a", steps=100_000, T=32, seeds=5)
    top = scorecard.record(
        "fig3a.edge", 1.43, profile="paper", run="r", budget=b, interval=(1.0, 2.0)
    )
    small = scorecard.record(
        "fig3a.edge", 1.0, profile="quick", budget=verdict.budget("fig3a", steps=1000, T=8, seeds=3)
    )
    text = verdict.block([small], [top], "quick")
    assert "**Undecided** at the largest budget measured" in text
    assert "Where rows decide, at this build (quick)" in text and "**Not reproduced**" in text


def test_a_late_rule_decides_only_where_the_rule_before_it_gives_the_same(build, monkeypatch):
    values = dict(scorecard.paper_values())
    entry = {**values["fig4b.lstm_below_gd"], "rule_set_after_runs": ["old-run"]}
    monkeypatch.setattr(scorecard, "paper_values", lambda: {**values, entry["id"]: entry})
    rec = scorecard.score
    late = rec(entry["id"], 1.15, profile="paper", run="old-run")
    assert late.note == scorecard.RULE_AFTER and verdict.undecided(late)
    same = rec(entry["id"], 1.15, profile="paper", run="old-run", before=1.16)
    assert not verdict.undecided(same) and "gives 1.16, the same status" in same.note
    other = rec(entry["id"], 1.15, profile="paper", run="old-run", before=0.5)
    assert verdict.undecided(other)  # the rule before it would have passed: left open
    assert not verdict.undecided(rec(entry["id"], 1.15, profile="paper", run="new-run"))
