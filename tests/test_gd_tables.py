"""The printed tables of "RNNs learn gradient descent" (report/gd_tables.py)."""

from types import SimpleNamespace

import numpy as np
import pytest

from gated_attention.experiments import regression_config
from gated_attention.report import gd_tables

ETA = 5 / 74


def analysis(**kw):
    """A stand-in for gd_learned.RegressionAnalysis: two seeds of n = 80."""
    coefs = np.full((2, 12, 3), ETA)
    coefs[1, -1, 0] = 2 * ETA  # seed 1 weighs its last step double on i = 1
    a = SimpleNamespace(
        n_top=80,
        top=np.array([4, 5]),
        top_seeds=np.array([0, 1]),
        gd_mean=0.1,
        top_rnn_mean=np.array([0.101, 0.102]),
        top_gap=np.array([0.001, 0.002]),
        top_gap_se=np.array([0.0001, 0.0002]),
        raw_mean=0.1015,
        gap=0.0015,
        gap_se=0.0001,
        rnn_loss=7 / 74 + 0.0015,
        coefs=coefs,
        per_seed_coefs=coefs.mean(axis=1),
        residual_ratios=np.array([0.01, 0.03]),
        coef_rel_error=0.5,
        memory_lam=np.array([0.99, 0.999, 0.95]),
    )
    vars(a).update(kw)
    return a


@pytest.mark.parametrize("profile", ["smoke", "paper"])
def test_the_setup_says_what_a_short_profile_changes(profile, capsys):
    gd_tables.print_setup(profile, regression_config(profile))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"profile: {profile}"
    changes = [x for x in lines if x.startswith(f"{profile} changes:")]
    assert len(changes) == (profile != "paper")


def test_the_gap_lines_pair_each_seed_with_its_share_of_gd(capsys):
    gd_tables.print_gd_gap(analysis(), 0.0946, 0.0002, 1000)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "seed 0: RNN 0.10100   RNN - GD = +0.00100 +- 0.00010  (+1.00% of GD)"
    assert lines[1].endswith("(+2.00% of GD)")
    assert "paired gap RNN - GD = +0.00150 +- 0.00010, i.e. +1.50% +- 0.10%" in lines[4]
    # the sign, against the paper's RNN below GD (0.0945 against 0.0947)
    assert lines[5] == (
        "the RNN lies above GD here; the paper's RNN lies below: 0.0945 against 0.0947, "
        "-0.21% of GD"
    )
    assert lines[-1].startswith("GD loss, Monte Carlo on 1,000 sequences: 0.09460 +- 0.00020")


def test_table2_reads_mean_std_and_spread_per_coordinate(capsys):
    check = SimpleNamespace(coefs=np.full(3, ETA), residual_ratio=1e-17)
    gd_tables.print_table2(analysis(), check, ETA)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("residual ratio 1.0e-17")
    first = lines[3].split()  # x_t[1] y_t[1] x_q[1]: seed 1 is higher by eta* / 12
    mean, std = (ETA + ETA * 13 / 12) / 2, np.std([ETA, ETA * 13 / 12], ddof=1)
    assert float(first[4]) == pytest.approx(mean, abs=1e-5)
    assert float(first[6]) == pytest.approx(std, abs=1e-5)
    assert float(lines[4].split()[-1]) == 0.0  # i = 2: no spread over t
    assert lines[6].split()[-3:] == ["0.0200", "+-", "0.0141"]  # residual ratios
    assert lines[-1].endswith("of the three: 50.00%")


def test_one_network_has_no_spread_over_seeds(capsys):
    a = analysis(top=np.array([4]), residual_ratios=np.array([0.01]))
    a.per_seed_coefs = a.per_seed_coefs[:1]
    gd_tables.print_table2(a, SimpleNamespace(coefs=np.ones(1), residual_ratio=0.0), ETA)
    assert "+- 0.00000" in capsys.readouterr().out


def test_memory_and_a_recorded_run(capsys):
    a = analysis()
    gd_tables.print_memory(a, ETA)
    gd_tables.print_recorded_run(a, ETA)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("per network: 1.5 neurons with lam > 0.9")
    assert lines[0].endswith("median lam among them 0.9900")
    assert lines[1] == "coefficient spread over t: 1.00 to 2.00 eta*"
    assert lines[2] == (
        "  n = 80, seed 0: RNN 0.10100, RNN - GD = +0.00100 +- 0.00010 (+1.00% of GD)"
    )
    assert lines[4].startswith(
        "  Table 2 coefficients (mean over seeds and t): 0.07038, "
    )  # 25/24 eta*
    assert lines[5] == "  memory neurons per network: 1.5, median lam 0.99000"


def test_the_transition_counts_seeds_per_size(capsys):
    gd_tables.print_transition(SimpleNamespace(sizes=(8, 16), k=(1, 4), R=4, estimate=12))
    out = capsys.readouterr().out.strip()
    assert out.endswith("seeds per size 8: 1/4, 16: 4/4; n* = 12")
