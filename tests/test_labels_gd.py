"""The rows of App. D.2 and Sec. 5 hold only the paper's numbers in the paper column, compare
nothing with itself, and say the sign and size their criteria accept (paper_values.json,
readings.gd_learned, readings.gd_step)."""

import numpy as np
import pytest

from gated_attention.readings import gd_learned, gd_step
from gated_attention.report import scorecard, verdict
from gated_attention.tasks import regression


def test_the_min_loss_row_compares_our_7_74_with_the_papers_0_0947(build):
    entry = scorecard.paper_values()["appD2.min_loss"]
    assert entry["paper"] == 0.0947 and "reference" not in entry  # compared with the paper's
    row = scorecard.record("appD2.min_loss", 7 / 74, profile="quick")
    assert row.status == "pass" and scorecard.paper_cell(row) == "0.0947"
    assert scorecard.record("appD2.min_loss", 0.0960, profile="quick").status == "miss"
    assert "either side" in entry["words"] and "0.11% below" in entry["words"]


def test_eta_star_is_shown_beside_our_5_74_not_scored(build):
    entry = scorecard.paper_values()["appD2.eta_star"]
    assert entry["paper"] is None and entry["criterion"] == "report"
    row = scorecard.record("appD2.eta_star", 0.0676, profile="quick")
    assert row.status == "report"
    assert scorecard.paper_cell(row) == f"n/a; {scorecard.REF_OURS} 5/74"  # ours, labelled
    claim = next(c for c in verdict.claims() if c.id == "appD2")
    assert claim.central == ("appD2.min_loss",)


def test_the_monte_carlo_minimiser_reads_the_parabola():
    etas = np.linspace(0.02, 0.12, 11)
    assert gd_step.quadratic_minimiser(etas, 3 * (etas - 5 / 74) ** 2 + 0.1) == pytest.approx(
        5 / 74, rel=1e-9
    )
    with pytest.raises(ValueError, match="no minimum"):
        gd_step.quadratic_minimiser(etas, -(etas**2))
    with pytest.raises(ValueError, match="three or more"):
        gd_step.quadratic_minimiser(etas[:2], etas[:2])


def test_the_gap_row_holds_no_derived_paper_value_and_says_it_accepts_either_sign():
    values = scorecard.paper_values()
    gap = values["sec5.loss_gap_rel"]
    assert gap["paper"] is None  # -0.2% is derived from 0.0945 and 0.0947: not the paper's
    assert "either sign" in gap["words"] and "-0.2%" in gap["words"]
    for i in ("sec5.rnn_loss", "sec5.gd_loss"):
        assert "either side" in values[i]["words"], i
    assert gd_learned.PAPER_GAP == pytest.approx(-0.0021, abs=1e-4)


def test_the_gap_note_carries_the_sign_and_its_standard_error():
    gd = regression.GD_MIN_LOSS
    above = gd_learned.gap_note(0.0065 * gd, 0.0010 * gd, gd)
    assert above.startswith("signed: RNN - GD = +0.65% +- 0.10% of GD, paired (6.5 SE above")
    assert above.endswith("the opposite sign to the paper's -0.2% (RNN below GD)")
    below = gd_learned.gap_note(-0.003 * gd, 0.0005 * gd, gd)
    assert "RNN below GD, the sign of the paper's" in below
    assert "not resolved" in gd_learned.gap_note(0.0001 * gd, 0.0001 * gd, gd)
    assert "(over 100 SE above zero)" in gd_learned.gap_note(0.01, 1e-20, gd)


def test_the_gap_row_passes_either_sign_and_its_note_says_which(build):
    from types import SimpleNamespace

    gd = regression.GD_MIN_LOSS
    a = SimpleNamespace(gap=0.0065 * gd, gap_se=0.001 * gd, gd_mean=gd)
    note = gd_learned.gap_note(a.gap, a.gap_se, a.gd_mean)
    row = scorecard.record("sec5.loss_gap_rel", abs(a.gap) / gd, profile="quick", note=note)
    assert row.status == "pass" and "opposite sign" in row.note and row.paper is None
