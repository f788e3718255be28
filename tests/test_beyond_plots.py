"""The figures of "Beyond the paper" (report/beyond_plots.py): each draws what it is given."""

import matplotlib
import matplotlib.pyplot as plt

from gated_attention.constructions.capped_memory import CappedPoint
from gated_attention.readings.beyond import CappedStudent
from gated_attention.report import beyond_plots

matplotlib.use("Agg")  # tests only; chapters draw inline


def test_the_figures_draw():
    fig = beyond_plots.plot_output_counts([1, 2, 3], {"a": [1, 4, 9]}, {"t": [10, 12]})
    assert len(fig.axes) == 1
    pts = {1: [CappedPoint(0.99, T, 1, 0.005 * T) for T in (1, 10)]}
    assert len(beyond_plots.plot_capped_law(pts, (1e-3, 1e-1)).axes) == 1
    rows = [
        CappedStudent(T, c, 0, 1e-3, 4, 4, 1, 1, c, (c, 0.5, 0.0))
        for T in (8, 32)
        for c in (1.0, 0.9)
    ]
    keys = [(T, c) for T in (8, 32) for c in (1.0, 0.9)]
    construction = {(T, c): [0.0 if c == 1.0 else 0.1] for T, c in keys}
    figure = beyond_plots.plot_capped_training(rows, {"1 bank": construction})
    assert len(figure.axes) == 2
    plt.close("all")
