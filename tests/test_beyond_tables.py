"""The tables of "Beyond the paper" (report/beyond_tables.py): what they print and return."""

import pytest

from gated_attention.constructions.capped_memory import CappedPoint
from gated_attention.experiments.capped_memory import CappedStudent
from gated_attention.report import beyond_tables as bt
from gated_attention.report.output_counts import OutputCount


def test_the_bound_table_has_the_compressed_count_and_its_lower_bound():
    table, bound = bt.neuron_bound_table(range(1, 5))
    assert bound == {d: d * (d + 1) // 2 for d in range(1, 5)}
    lines = table.splitlines()
    assert len(lines) == 2 + 4
    assert lines[-1] == "| 4 | 14 | 16 | 10 | 10 |"  # n = 10 + 4, m: 16, 10, bound 10


def test_the_planted_case_matches_its_closed_form():
    assert bt.planted_max_error((0.99, 0.9), (1, 8), (1, 2)) < 1e-10


def test_output_counts_return_the_learned_and_count_those_at_the_bound(capsys):
    def member(seed, m, learned):
        return OutputCount("r", seed, 14, m, m, 10, 4, 1e-6, learned)

    counts = [member(0, 10, True), member(1, 40, False), member(2, 13, True)]
    assert bt.print_output_counts(counts, 10) == [10, 13]
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1 + 3 + 2  # header, rows, blank + summary
    assert "learned the construction: 2 of 3" in out
    assert "min 10, median 11.5, max 13 (lower bound 10); at the bound: 1" in out


def test_each_student_sits_beside_the_construction_of_its_own_seed(capsys):
    class Config:
        seeds = (7, 9)

    rows = [CappedStudent(8, 0.9, s, 1e-3, 4, 4, 1, 1, 0.9, (0.9,)) for s in (9, 7)]
    construction = {(8, 0.9): [1.0, 2.0]}  # seed 7, seed 9
    two_banks = {(8, 0.9): [3.0, 4.0]}
    bt.print_capped_students(rows, {(8, 0.9): Config}, construction, two_banks)
    header, first, second = capsys.readouterr().out.strip().splitlines()
    assert header.split()[:5] == ["T", "cap", "seed", "loss", "constr."]
    assert first.split()[2:6] == ["9", "1.00e-03", "2.00e+00", "4.00e+00"]
    assert second.split()[2:6] == ["7", "1.00e-03", "1.00e+00", "3.00e+00"]


def test_the_law_table_counts_the_points_inside_the_fit(capsys):
    law = {p: [CappedPoint(0.99, T, p, 0.01 * p) for T in (1, 10, 100)] for p in (1, 2)}
    bt.print_capped_law(law, {1: 1.0, 2: 2.0}, (1e-3, 0.2), 1e-15)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("= 1.0e-15")
    assert lines[1].startswith("1 bank(s): fitted exponent 1.000 over 2 points")  # x = .01, .1
    assert len(lines) == 3 + 1 + 1 + 3
    assert float(lines[-1].split()[2]) == pytest.approx(1.0)  # x = 100 (1 - 0.99)
