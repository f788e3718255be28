"""The chapters' figures moved into the package (report/teacher_plots.py, regression_plots.py,
bench_plots.py): each draws the numbers it is given, and the planted merge group merges back."""

import matplotlib
import matplotlib.pyplot
import numpy as np
import pytest
import torch

from gated_attention import random_attention
from gated_attention.analysis import contributions, gaussian_inputs, merge, network, output_change
from gated_attention.analysis.polynomial import rnn_polynomial
from gated_attention.constructions.gated_rnn import construct_rnn
from gated_attention.readings.teacher_merge import planted_merge_group
from gated_attention.report.regression_plots import (
    gd_monomials,
    plot_coefficient_histogram,
    plot_gd_loss_eta,
    plot_gd_rnn_weights,
    plot_memory,
    plot_training_losses,
)
from gated_attention.report.teacher_plots import plot_contributions, plot_merge_kernels
from gated_attention.tasks import regression
from lab.bench_plots import plot_bench

matplotlib.use("Agg")  # tests only; chapters draw inline


def test_planted_merge_group_is_one_neuron_in_disguise():
    teacher = random_attention(4, seed=0)
    net, group = planted_merge_group(teacher)
    x = gaussian_inputs(4, 8, 16, seed=1)
    assert output_change(network(construct_rnn(teacher, "symmetric")), net, x) < 1e-10
    assert merge(net, rtol=1e-8).groups == [group]


def test_merge_kernels_draw_the_parts_and_their_sum():
    net, group = planted_merge_group(random_attention(3, seed=0))
    fig = plot_merge_kernels(net, group)
    images = [ax.images[0].get_array() for ax in fig.axes]
    assert len(images) == len(group) + 1
    np.testing.assert_allclose(sum(images[:-1]), images[-1], atol=1e-12)
    assert fig.axes[0].get_ylabel() == "hidden neuron"


def test_contributions():
    rnn = network(construct_rnn(random_attention(3, seed=0), "full"))
    fig = plot_contributions(contributions(rnn), 1e-3)
    assert len(fig.axes) == 3 and len(fig.axes[0].lines[0].get_xdata()) == rnn.n


def test_edge_figure_draws_every_seed_the_median_and_the_levels():
    from gated_attention.readings.fig3_edges import Sweep
    from gated_attention.report.edge_plots import plot_edges

    sizes = np.array([4, 8, 16])
    E = np.array([[1.0, 0.5], [1e-2, 1e-3], [1e-4, 0.0]])  # 0: drawn at the floor
    sweeps = [Sweep(p, sizes, E, 100, 8) for p in "ABC"]
    fig = plot_edges(sweeps, ["a", "b", "c"], ncols=2)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(fig.axes) == 4 and len(shown) == 3 and fig.legends
    assert not any(ax.get_legend() for ax in fig.axes)
    ax = shown[0]
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [1.0, 1e-2, 1e-4])  # seed 0
    assert ax.lines[1].get_ydata()[-1] == pytest.approx(1e-12)  # seed 1's 0 at the floor
    np.testing.assert_allclose(ax.lines[2].get_ydata()[:2], [0.5**0.5, 10**-2.5])  # median
    assert [ln.get_ydata()[0] for ln in ax.lines[3:6]] == [1e-2, 1e-4, 1e-6]
    assert [ln.get_xdata()[0] for ln in ax.lines[6:8]] == [14, 28]


def test_regression_figures():
    rnn = regression.gd_rnn()
    fig = plot_gd_rnn_weights(rnn)
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), rnn.W_in1.detach().numpy())
    poly = rnn_polynomial(network(rnn), 13)
    assert gd_monomials(poly).sum() == 36
    plot_coefficient_histogram(poly, regression.ETA_STAR)
    coefs = np.full((2, 12, 3), regression.ETA_STAR)
    fig = plot_memory(coefs, [0, 1], np.array([0.0, 1.0]), regression.ETA_STAR)
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), 1.0)
    fig = plot_training_losses(np.arange(3), torch.ones(3, 2).numpy(), ["a", "b"], 0.0946)
    assert len(fig.axes[0].lines) == 3


def test_bench_figure():
    results = {
        "reference_steps_per_s": 10.0,
        "engine_steps_per_s": 50.0,
        "engine_speedup": 5.0,
        "sequential_steps_per_s": 100.0,
        "batched_steps_per_s": 400.0,
        "ensemble_speedup": 4.0,
        "engine_gflops": 20.0,
        "gemm_peak_gflops": 100.0,
        "peak_fraction": 0.2,
    }
    fig = plot_bench(results)
    heights = [[p.get_height() for p in ax.patches] for ax in fig.axes]
    assert heights == [[10.0, 50.0], [100.0, 400.0], [20.0, 100.0]]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    matplotlib.pyplot.close("all")


def test_the_monte_carlo_check_measures_in_standard_errors():
    from gated_attention.readings.gd_step import monte_carlo_check

    mean = torch.tensor([0.30, 0.20, 0.11], dtype=torch.float64)
    se = torch.tensor([0.01, 0.02, 0.005], dtype=torch.float64)
    exact = torch.tensor([0.25, 0.20, 0.10], dtype=torch.float64)
    check = monte_carlo_check(mean, se, exact)
    assert check.z == pytest.approx(2.0)  # (0.11 - 0.10) / 0.005, at eta* (the last)
    assert (check.mean, check.se) == pytest.approx((0.11, 0.005))
    assert check.worst == pytest.approx(5.0) and check.rates == 3


def test_the_gd_loss_curve_draws_the_exact_loss_and_the_estimates():
    etas = torch.tensor([0.02, 0.05, 0.08], dtype=torch.float64)
    mean = torch.tensor([0.4, 0.3, 0.2], dtype=torch.float64)
    fig = plot_gd_loss_eta(lambda e: (e - 0.07) ** 2, 0.07, etas, mean, 0.01 * mean)
    (ax,) = fig.axes
    x, y = ax.lines[0].get_data()
    assert np.allclose(y, (np.asarray(x) - 0.07) ** 2) and x[-1] == pytest.approx(0.13)
    points = [c for c in ax.containers if hasattr(c, "lines")][0].lines[0]
    assert np.allclose(points.get_xdata(), [0.02, 0.05])  # eta* (the last) is not a point
    assert np.allclose(points.get_ydata(), [0.4, 0.3])
    matplotlib.pyplot.close(fig)
