"""The GRU's verdict says what the check finds and nothing stronger: no exact construction; a
two-layer small-weight limit exists (ours). The claim is not scored, so the introduction's
table shows no cross for it (paper_values.json, the notes of the chapter, scorecard_page)."""

from pathlib import Path

from gated_attention.report import scorecard, scorecard_page, verdict

FINDING = "no exact construction; a two-layer small-weight limit exists"
CHAPTER = Path(__file__).resolve().parents[1] / "book" / "which_rnns_can_be_attention.md"


def chapter_notes() -> tuple[str, str]:
    """The text of the chapter's cells that score table3.gru and its slope, from the note
    before each row's key to the key."""
    text = CHAPTER.read_text()
    gru = text.split('key = "table3.gru"\n')[0].rsplit("note = (", 1)[1]
    slope = text.split('key = "table3.gru_two_layer_error_slope"')[0].rsplit("note = (", 1)[1]
    return gru, slope


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
    gru_note, slope_note = chapter_notes()
    assert FINDING in gru_note and "not an exact construction" in slope_note
    rows = [
        scorecard.record("table3.gru", 0.02, profile="quick", note=f"{FINDING} (ours)"),
        scorecard.record("table3.gru_two_layer_error_slope", 2.01, profile="quick"),
    ]
    slope = rows[1]
    assert slope.status == "miss"  # its criterion, as committed: the error falls with eps
    assert verdict.status(gru_claim(), rows) == "not scored"
    intro = scorecard_page.summary_html(rows, [], "quick")
    line = next(part for part in intro.split("<tr>") if "which_rnns_can_be_attention" in part)
    assert "not scored" in line and "&#10007;" not in line  # no cross
    assert FINDING in line
