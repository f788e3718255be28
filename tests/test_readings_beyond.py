"""The readings of "Beyond the paper" (readings/beyond.py): rows of numbers."""

import numpy as np
import pytest

from gated_attention.constructions.capped_memory import CappedPoint, planted_error
from gated_attention.constructions.compressed_output import construct_compressed
from gated_attention.models.attention import random_attention
from gated_attention.readings import beyond as rb
from gated_attention.readings.beyond import CappedStudent


@pytest.mark.parametrize("banks", [1, 2])
def test_law_is_the_long_sequence_limit_of_the_planted_error(banks):
    for x in (1e-3, 0.1, 3.0):
        T = 20_000
        lam = 1 - x / T
        assert float(rb.law(x, banks)) == pytest.approx(planted_error(lam, T, banks), rel=1e-3)
    x = np.array([1e-3, 2e-3])
    e = rb.law(x, banks)
    assert np.log(e[1] / e[0]) / np.log(2) == pytest.approx(banks, abs=0.01)


def test_the_bound_rows_have_the_compressed_count_and_its_lower_bound():
    rows = rb.neuron_bounds(range(1, 5))
    assert [r["bound"] for r in rows] == [d * (d + 1) // 2 for d in range(1, 5)]
    assert rows[-1] == {"d": 4, "n": 14, "m_full": 16, "m": 10, "bound": 10}


def test_the_compressed_construction_splits_its_memory():
    rnn = construct_compressed(random_attention(4, seed=0))
    assert rb.memory_split(rnn) == (10, 4)


def test_the_planted_case_matches_its_closed_form():
    assert rb.planted_max_error((0.99, 0.9), (1, 8), (1, 2)) < 1e-10


def test_each_student_sits_beside_the_construction_of_its_own_seed():
    class Config:
        seeds = (7, 9)

    rows = [CappedStudent(8, 0.9, s, 1e-3, 4, 4, 1, 1, 0.9, (0.9,)) for s in (9, 7)]
    construction = {(8, 0.9): [1.0, 2.0]}  # seed 7, seed 9
    two_banks = {(8, 0.9): [3.0, 4.0]}
    first, second = rb.student_rows(rows, {(8, 0.9): Config}, construction, two_banks)
    assert (first["seed"], first["construction"], first["two_banks"]) == (9, 2.0, 4.0)
    assert (second["seed"], second["construction"], second["two_banks"]) == (7, 1.0, 3.0)


def test_the_law_rows_hold_both_banks_beside_the_law():
    law = {p: [CappedPoint(0.99, T, p, 0.01 * p) for T in (1, 10, 100)] for p in (1, 2)}
    rows = rb.law_rows(law)
    assert len(rows) == 3
    assert rows[-1]["x"] == pytest.approx(1.0)  # x = 100 (1 - 0.99)
    assert (rows[-1]["error_1"], rows[-1]["error_2"]) == (0.01, 0.02)
    assert rows[-1]["law_2"] == pytest.approx(float(rb.law(1.0, 2)))


def test_the_medians_are_ratios_of_seed_medians():
    def student(T, cap, seed, loss, at_cap=0):
        return CappedStudent(T, cap, seed, loss, 4, 4, at_cap, 0, cap, ())

    rows = [student(8, 0.9, s, 1.0 + s) for s in range(3)]  # median 2
    rows += [student(32, 0.9, s, 4.0 + s) for s in range(3)]  # median 5
    rows += [student(32, 0.99, s, 3.0, at_cap=s) for s in range(3)]  # median 3, at cap 1
    rows += [student(32, 1.0, s, 1.5) for s in range(3)]
    med = rb.capped_medians(rows, {(32, 0.9): [10.0, 20.0]})
    assert med == {"growth": 2.5, "ratio_099": 2.0, "vs_construction": 1 / 3, "at_cap": 1.0}
    assert rb.seed_median(rows, 8, 0.9) == 2.0
