"""The GRU's verdict says what the check finds and nothing stronger: no exact construction; a
two-layer small-weight limit exists (ours). The claim is not scored, so the introduction's
table shows no cross for it (paper_values.json, report.app_b_tables, scorecard_page)."""

from gated_attention.report import app_b_tables, scorecard, scorecard_page, verdict

FINDING = "no exact construction; a two-layer small-weight limit exists"


def gru_claim():
    return next(c for c in verdict.claims() if c.id == "gru")


def test_the_claims_ours_says_the_finding_and_nothing_stronger():
    c = gru_claim()
    assert "cannot" in c.claim and "any depth" in c.claim  # the paper's claim, as it states it
    assert c.ours.startswith(FINDING)
    assert not any(w in c.ours.lower() for w in ("refute", "do compute", "does not hold"))
    assert c.central == ()  # neither finding decides a claim about exact implementations
    words = scorecard.paper_values()["table3.gru_two_layer_error_slope"]["words"]
    assert "refute" not in words and "two-layer small-weight limit exists" in words


def test_the_rows_note_the_finding_and_the_intro_shows_no_cross(build):
    findings = {"two_layer_slope": 2.01}
    rows = app_b_tables.gru_records(0.02, findings, [0.1, 0.01], profile="quick")
    assert FINDING in rows[0].note and "not an exact construction" in rows[1].note
    slope = rows[1]
    assert slope.status == "miss"  # its criterion, as committed: the error falls with eps
    assert verdict.status(gru_claim(), rows) == "not scored"
    intro = scorecard_page.summary_html(rows, [], "quick")
    line = next(part for part in intro.split("<tr>") if "which_rnns_can_be_attention" in part)
    assert "not scored" in line and "&#10007;" not in line  # no cross
    assert FINDING in line
