"""The tables of the construction chapters (report/construction_tables.py)."""

from gated_attention.report import construction_tables as ct
from gated_attention.report.plotting import construction_counts


def test_the_profile_and_the_checks_are_printed(capsys):
    ct.print_no_training("smoke", sympy="d = 2, 3; T = 3")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "profile: smoke"
    assert lines[2].startswith("exact sympy checks (d = 2, 3; T = 3), and float64")


def test_side_by_side_has_one_row_per_teacher_with_its_counts():
    table = ct.side_by_side_table([(4, None), (12, 6)])
    lines = table.splitlines()
    assert lines[2] == "| d | attention params | full | symmetric | low rank | side |"
    d4, d12 = lines[-2:]
    assert d4.startswith("| 4 | 48 | 20 / 16 / ")  # n = d^2 + d, m = d^2
    assert d4.split(" | ")[3].startswith("14 / 16")  # symmetric: d(d+1)/2 + d
    assert d12.startswith("| 12, rank 6 | 432 |")
    assert "n/a (W_V singular)" in d12
    assert d12.split(" | ")[4].startswith("42 / 36")  # low rank: r(r + 1), r^2


def test_error_table_puts_each_variant_in_its_column():
    errors = {"full": {1: 1e-15, 2: 2e-15}, "side": {1: 3e-13, 2: 4e-13}}
    lines = ct.error_table(errors).splitlines()
    assert lines[2] == "| d | full | side |"
    assert lines[3] == "|---|---|---|"
    assert lines[4:] == ["| 1 | 1.0e-15 | 3.0e-13 |", "| 2 | 2.0e-15 | 4.0e-13 |"]


def test_count_table_rows_follow_the_header():
    counts = construction_counts(range(1, 4))
    lines = ct.count_table(counts).splitlines()
    header = [h.strip() for h in lines[0].strip("|").split("|")]
    assert len(lines) == 2 + 3
    for c, line in zip(counts, lines[2:], strict=True):
        cells = [int(x) for x in line.strip("|").split("|")]
        assert len(cells) == len(header)
        assert cells[header.index("full m")] == c["full_m"] == c["d"] ** 2
        assert cells[header.index("side params")] == c["side_params"]
        assert cells[header.index("low rank n")] == c["low_rank_n"]
