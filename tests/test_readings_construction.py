"""The readings of the construction chapters (readings/construction.py): rows of numbers."""

import pytest
import torch

from gated_attention.constructions import symbolic
from gated_attention.readings import construction as rc
from gated_attention.report import table


def test_side_by_side_has_one_row_per_teacher_with_its_counts():
    d4, d12 = rc.side_by_side([(4, None), (12, 6)])
    assert d4["teacher"] == (4, None) and d4["attention"] == 48
    assert (d4["full"].n, d4["full"].m) == (20, 16)  # n = d^2 + d, m = d^2
    assert (d4["symmetric"].n, d4["symmetric"].m) == (14, 16)  # d(d+1)/2 + d
    assert d12["teacher"] == (12, 6) and d12["attention"] == 432
    assert d12["symmetric"] is None  # W_V singular
    assert (d12["low_rank"].n, d12["low_rank"].m) == (42, 36)  # r(r + 1), r^2


def test_error_rows_put_each_variant_in_its_column():
    errors = {"full": {1: 1e-15, 2: 2e-15}, "side": {1: 3e-13, 2: 4e-13}}
    rows = rc.error_rows(errors)
    assert rows == [{"d": 1, "full": 1e-15, "side": 3e-13}, {"d": 2, "full": 2e-15, "side": 4e-13}]
    lines = table.markdown(rows, formats={"full": ".1e", "side": ".1e"}).splitlines()
    assert lines[2:] == ["| 1 | 1.0e-15 | 3.0e-13 |", "| 2 | 2.0e-15 | 4.0e-13 |"]


def test_error_curves_hold_each_error_and_the_slope():
    eps = [1e-1, 1e-2, 1e-3]
    (row,) = rc.error_curves({"c": [3 * e**2 for e in eps]}, eps)
    assert list(row) == ["curve", "1e-01", "1e-02", "1e-03", "slope"]
    assert row["1e-02"] == pytest.approx(3e-4) and row["slope"] == pytest.approx(2.0)


def test_symbolic_rows_count_what_is_left():
    proofs = [symbolic.symbolic_construction("low_rank", 2, T=2, r_V=1, r_KQ=1)]
    (row,) = rc.symbolic_rows(proofs)
    assert (row["variant"], row["d"], row["ranks"], row["T"]) == ("low_rank", 2, (1, 1), 2)
    assert row["n"] == 2 and row["monomials"] == 0


def test_weight_summary_reads_nested_tensors_and_skips_infinities():
    params = {"a": torch.tensor([0.0, -3.0]), "b": [{"c": torch.tensor([float("-inf"), 2.0])}]}
    assert rc.weight_summary(params) == (3, 3.0)
