"""The printed checks of "Which RNNs can be attention" (report/app_b_tables): the summary table
reads the errors and slopes it is given, the Mamba-style weights hold the teacher, the GRU stack
runs in torch.nn.GRU, and the rows are scored with their notes."""

import pytest

from gated_attention.constructions import linearised, mamba
from gated_attention.models.attention import random_attention
from gated_attention.report import app_b_tables, scorecard

EPS = [1e-1, 1e-2, 1e-3]


@pytest.fixture
def build(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path))
    monkeypatch.setattr(scorecard, "_SESSION", [])


def test_summary_reads_each_rows_error_and_slope():
    curves = {  # slope 2 for the LRUs, 1 for the LSTM: errors c eps^k
        "LRU, 2 layers": [3 * e**2 for e in EPS],
        "LRU In+Out, 1 layer": [5 * e**2 for e in EPS],
        "LSTM, 1 layer": [7 * e for e in EPS],
    }
    text = app_b_tables.summary_markdown(curves, 1e-16, 0.25, {"two_layer_slope": 1.987}, EPS)
    lines = text.splitlines()
    assert lines[0].startswith(
        "| architecture | layers (paper) | layers (our check) | rel. error at eps = 0.1 |"
    )
    assert lines[2] == "| LRU (output GLU) | 2 | 2 layers | 3.0e-02 | 2.00 |"
    assert lines[3] == "| LRU In+Out | 1 | 1 layer | 5.0e-02 | 2.00 |"
    assert lines[4] == "| Mamba-style | 1, exact | 1 layer, exact | 1.0e-16 | none (exact) |"
    assert lines[5] == "| LSTM (Table 4) | 1 | 1 layer | 7.0e-01 | 1.00 |"
    assert lines[6] == "| GRU | none, in any depth | 2 layers | 2.5e-01 | 1.99 (eps <= 1e-2) |"


def test_the_mamba_weights_hold_the_teacher(capsys):
    teacher = random_attention(4, seed=0)
    app_b_tables.print_mamba_weights(mamba.mamba_construction(teacher), teacher, 4)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["keys", "in", "B_t:", "True"]
    assert lines[1].split() == ["queries", "in", "C_t:", "True"]
    assert lines[2].startswith("A = -exp(A_log) = 0 everywhere")
    assert app_b_tables.mamba_error_text(2e-14, 40.0) == (
        "max |y - y_att| = 2.0e-14 on outputs up to 40: relative 5.0e-16"
    )


def test_the_gru_stack_is_an_ordinary_two_layer_gru(capsys):
    teacher = random_attention(4, seed=0)
    app_b_tables.print_gru_stack(teacher, linearised.random_inputs(4))
    first, growth, torch_line = capsys.readouterr().out.splitlines()
    assert first.startswith("36 units per layer (2 d^2 + d)")  # 2 * 16 + 4
    assert growth.startswith("  grows as eps^-")  # the weights grow as eps falls
    error = float(torch_line.rsplit(" ", 1)[1])
    assert error < 1e-3  # eps = 1e-3: an error of order eps^2 T


def test_the_rows_are_scored_with_their_notes(build):
    gru_row, slope_row = app_b_tables.gru_records(
        0.02, {"two_layer_slope": 2.01}, EPS, profile="quick"
    )
    assert (gru_row.id, gru_row.ours) == ("table3.gru", 0.02)
    assert "at eps = 0.1" in gru_row.note and "slope 2.01" in gru_row.note
    assert (slope_row.id, slope_row.ours) == ("table3.gru_two_layer_error_slope", 2.01)
    row = app_b_tables.mamba_record(3e-16, profile="quick")
    assert row.id == "table3.mamba_max_error" and row.status == "pass"
    assert app_b_tables.mamba_record(1e-2, profile="quick").status != "pass"
