"""The readings of "Which RNNs can be attention" (readings/app_b.py): the summary rows read
the errors and slopes they are given, the Mamba-style weights hold the teacher, and the GRU
stack runs in torch.nn.GRU."""

import pytest

from gated_attention.constructions import linearised, mamba
from gated_attention.models.attention import random_attention
from gated_attention.readings import app_b

EPS = [1e-1, 1e-2, 1e-3]


def test_summary_reads_each_rows_error_and_slope():
    curves = {  # slope 2 for the LRUs, 1 for the LSTM: errors c eps^k
        "LRU, 2 layers": [3 * e**2 for e in EPS],
        "LRU In+Out, 1 layer": [5 * e**2 for e in EPS],
        "LSTM, 1 layer": [7 * e for e in EPS],
    }
    rows = app_b.summary_rows(curves, 1e-16, 0.25, {"two_layer_slope": 1.987}, EPS)
    names = [r.architecture for r in rows]
    assert names == ["LRU (output GLU)", "LRU In+Out", "Mamba-style", "LSTM (Table 4)", "GRU"]
    lru, inout, mamba_row, lstm, gru = rows
    assert lru.error == pytest.approx(3e-2) and lru.slope == pytest.approx(2.0)
    assert inout.error == pytest.approx(5e-2) and inout.slope == pytest.approx(2.0)
    assert (mamba_row.error, mamba_row.slope, mamba_row.paper) == (1e-16, None, "1, exact")
    assert lstm.error == pytest.approx(0.7) and lstm.slope == pytest.approx(1.0)
    assert (gru.error, gru.slope, gru.fit) == (0.25, 1.987, "eps <= 1e-2")


def test_the_mamba_weights_hold_the_teacher():
    teacher = random_attention(4, seed=0)
    w = app_b.mamba_weights(mamba.mamba_construction(teacher), teacher, 4)
    assert w.keys_in_b and w.queries_in_c
    assert w.decay == 0.0  # A = -exp(A_log) = 0: no leak
    assert w.nonzero > 0 and w.largest > 0


def test_the_gru_stack_is_an_ordinary_two_layer_gru():
    teacher = random_attention(4, seed=0)
    stack = app_b.gru_stack(teacher, linearised.random_inputs(4))
    assert stack.units == 36  # 2 * 16 + 4
    assert stack.largest_1e3 > stack.largest_1e2 and stack.growth < 0  # grows as eps falls
    assert stack.torch_error < 1e-3  # eps = 1e-3: an error of order eps^2 T
