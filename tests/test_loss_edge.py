"""The loss edge of Fig. 3A-C (analysis.loss_edge) on planted sweeps, and the robustness configs
of Fig. 3A (experiments.robustness), fixed before their runs."""

import dataclasses

import numpy as np
import pytest

from gated_attention.analysis import CENTRAL_LEVEL, LEVELS, edges, loss_edge, median_excess
from gated_attention.experiments import robustness
from gated_attention.experiments.cpu_budget import cpu_config

SIZES = np.array([8, 14, 20, 28])


def test_edge_at_the_first_size_whose_median_and_all_larger_are_below_the_level():
    E = np.array([[1e-1] * 5, [1e-5] * 5, [1e-7] * 5, [1e-7] * 5])
    assert loss_edge(SIZES, E, 1e-4, 14).estimate == 14
    assert loss_edge(SIZES, E, 1e-6, 14).estimate == 20
    assert loss_edge(SIZES, E, 1e-8, 14).estimate is None
    assert loss_edge(SIZES, E, 1e-4, 14).ratio == 1.0
    assert np.isnan(loss_edge(SIZES, E, 1e-8, 14).ratio)


def test_a_larger_size_above_the_level_moves_the_edge_past_it():
    E = np.array([[1e-5] * 3, [1e-5] * 3, [1e-1] * 3, [1e-5] * 3])
    assert loss_edge(SIZES, E, 1e-4, 14).estimate == 28


def test_median_not_mean_a_single_stuck_seed_does_not_move_the_edge():
    E = np.array([[1e-1] * 5, [1e-5, 1e-5, 1e-5, 1e-5, 10.0], [1e-5] * 5, [1e-5] * 5])
    assert loss_edge(SIZES, E, 1e-4, 14).estimate == 14  # a geometric mean would say 20
    # three stuck seeds of five: the median is stuck
    E[1, :3] = 1.0
    assert loss_edge(SIZES, E, 1e-4, 14).estimate == 20


def test_ties_an_even_count_takes_the_geometric_mean_of_the_two_middle_seeds():
    # two seeds at 1e-5 and two at 1e-1: the median is 10 ** -3, above 1e-4, so "half the
    # seeds below the level" does not decide alone
    row = [1e-5, 1e-5, 1e-1, 1e-1]
    assert median_excess([row])[0] == pytest.approx(1e-3)
    E = np.array([[1.0] * 4, row, [1e-5] * 4, [1e-5] * 4])
    assert loss_edge(SIZES, E, 1e-4, 14).estimate == 20
    assert loss_edge(SIZES, E, 1e-2, 14).estimate == 14


def test_the_level_is_inclusive_at_its_boundary():
    E = np.array([[1.0] * 3, [1e-4] * 3, [1e-4] * 3, [1e-4] * 3])
    assert loss_edge(SIZES, E, 1e-4, 14).estimate == 14
    assert loss_edge(SIZES, E * 1.0001, 1e-4, 14).estimate is None


def test_excess_at_or_below_zero_counts_as_reached():
    E = np.array([[1.0] * 3, [-1e-5, 0.0, 1e-6], [1e-6] * 3, [1e-6] * 3])
    assert loss_edge(SIZES, E, 1e-4, 14).estimate == 14


def test_levels_and_central_level_fixed():
    assert LEVELS == (1e-2, 1e-4, 1e-6) and CENTRAL_LEVEL == 1e-4
    E = np.array([[1e-1] * 3, [1e-3] * 3, [1e-5] * 3, [1e-7] * 3])
    got = {L: e.estimate for L, e in edges(SIZES, E, 14).items()}
    assert got == {1e-2: 14, 1e-4: 20, 1e-6: 28}


@pytest.mark.parametrize(
    "sizes, E, match",
    [
        ([8, 14], np.ones((3, 2)), "shape"),
        ([14, 8], np.ones((2, 2)), "increase"),
        ([8, 14], np.array([[1.0, np.nan], [1.0, 1.0]]), "finite"),
    ],
)
def test_bad_input_is_refused(sizes, E, match):
    with pytest.raises(ValueError, match=match):
        loss_edge(sizes, E, 1e-4, 14)


def test_robustness_variants_change_one_setting_of_the_cpu_budget_sweep():
    base = cpu_config("how-many-neurons-A", "cpu")
    wd, teacher, lr = (
        cpu_config("how-many-neurons-A", f"cpu-{v}") for v in ("wd", "teacher", "lr")
    )
    for c in (wd, teacher, lr):
        assert c.sizes == robustness.SIZES == (8, 14, 20, 24, 28)
        assert set(c.sizes) <= set(base.sizes)  # paired with the baseline's members
        assert (c.T, c.seeds, c.train.steps) == (base.T, base.seeds, base.train.steps)
    assert (wd.train.weight_decay, wd.train.lr, wd.teacher_std) == (0.07, base.train.lr, 0.2)
    assert (lr.train.lr, lr.train.weight_decay, lr.teacher_std) == (1e-3, 1e-4, 0.2)
    assert teacher.teacher_std is None and teacher.train == base.train  # N(0, 1/d)
    with pytest.raises(ValueError, match="Fig. 3A"):
        cpu_config("how-many-neurons-B", "cpu-wd")


def test_later_runs_complete_the_two_by_two_and_resolve_sqrt_2():
    base = cpu_config("how-many-neurons-A", "cpu")
    both = cpu_config("how-many-neurons-A", "cpu-lr-wd")
    assert (both.train.lr, both.train.weight_decay, both.teacher_std) == (1e-3, 0.07, 0.2)
    assert both.sizes == (8, 14, 16, 18, 19, 20, 22, 24, 28)
    assert 19 < 2**0.5 * 14 < 20 and {19, 20} <= set(robustness.FINE_SIZES)
    for v in robustness.FINE:
        coarse = cpu_config("how-many-neurons-A", f"cpu-{v}")
        fine = cpu_config("how-many-neurons-A", f"cpu-{v}-fine")
        assert fine.sizes == robustness.FINE_SIZES and fine.train.mode == "compiled"
        same = dataclasses.replace(fine.train, mode=coarse.train.mode)
        assert same == coarse.train and fine.seeds == coarse.seeds == base.seeds
    with pytest.raises(ValueError, match="unknown budget"):
        cpu_config("how-many-neurons-A", "cpu-teacher-fine")
    with pytest.raises(ValueError, match="no fine sweep"):
        robustness.fine_config("teacher", base)


def test_the_bootstrap_interval_spans_the_edges_the_seeds_allow():
    import importlib

    le = importlib.import_module("gated_attention.analysis.loss_edge")
    # every seed alike: no spread, the interval is the edge itself
    E = np.array([[1e-1] * 5, [1e-5] * 5, [1e-7] * 5, [1e-7] * 5])
    assert le.edge_interval(SIZES, E, 1e-4) == (14, 14)
    # at 14 two seeds of five are stuck: some draws have a stuck median there (edge 20)
    E[1, :2] = 1.0
    assert loss_edge(SIZES, E, 1e-4, 14).estimate == 14
    assert le.edge_interval(SIZES, E, 1e-4) == (14, 20)
    # one seed stuck at the largest size: in some draws no size is an edge (open above)
    E[-1, 0] = 1.0
    lo, hi = le.edge_interval(SIZES, E, 1e-4)
    assert lo == 14 and hi is None
    # the same seed, the same draws: the interval is reproducible
    assert le.edge_interval(SIZES, E, 1e-4) == le.edge_interval(SIZES, E, 1e-4, seed=0)


def test_still_learning_needs_a_fall_over_the_last_fifth_and_a_loss_above_the_level():
    import importlib

    le = importlib.import_module("gated_attention.analysis.loss_edge")
    steps = 1000
    t = np.arange(10, steps + 1, 10)
    flat = np.ones_like(t, dtype=float)
    falling = np.where(t > 800, 0.5, 1.0)  # halves in the last fifth
    L = np.stack([flat, falling, falling], axis=1)
    excess = np.array([1e-2, 1e-2, 1e-6])  # the third is already below the level
    assert le.still_learning(t, L, excess, 1e-4, steps).tolist() == [False, True, False]
    # a floor no network can pass: the fall of the excess over it counts
    near = np.where(t > 800, 1.05, 1.1)  # 1.1 -> 1.05: 5% of the loss, half of its excess
    L = near[:, None]
    assert not le.still_learning(t, L, [1e-2], 1e-4, steps)[0]
    assert le.still_learning(t, L, [1e-2], 1e-4, steps, floor=1.0)[0]
    with pytest.raises(ValueError, match="often enough"):
        le.still_learning(t[:5], L[:5], [1e-2], 1e-4, steps)
