"""Figures of gated_attention/plotting.py: they must draw the network's own numbers."""

import matplotlib
import matplotlib.pyplot
import numpy as np
import pytest
import torch

from gated_attention import construct_rnn, neuron_count, parameter_count, random_attention
from gated_attention.report.plotting import (
    construction_counts,
    lam_blocks,
    plot_construction,
    plot_counts,
    plot_decay_matrices,
)

matplotlib.use("Agg")  # tests only; chapters draw inline


def _images(fig) -> dict:
    return {ax.get_title(): ax.images[0].get_array() for ax in fig.axes if ax.images}


@pytest.mark.parametrize("variant", ["full", "symmetric", "side"])
def test_plot_construction_draws_the_weights(variant):
    rnn = construct_rnn(random_attention(3, seed=0), variant)
    images = _images(plot_construction(rnn))
    expected = {"W_in1": rnn.W_in1, "W_in2": rnn.W_in2, "D^T": rnn.D.T, "λ": rnn.lam[:, None]}
    expected.update({"W_side": rnn.W_side} if variant == "side" else {})
    expected.update({} if variant == "side" else {"W_out1": rnn.W_out1, "W_out2": rnn.W_out2})
    assert set(images) == set(expected)
    for key, W in expected.items():
        np.testing.assert_array_equal(np.asarray(images[key]), W.detach().numpy(), err_msg=key)


def test_plot_construction_marks_the_groups():
    rnn = construct_rnn(random_attention(2, seed=0), "full")  # 4 key-value, 2 query neurons
    fig = plot_construction(rnn, output_groups=[("a", 0, 2), ("b", 2, 4)])
    ax = next(a for a in fig.axes if a.get_title() == "W_in1")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["key-value (λ=1)", "query (λ=0)"]
    assert [line.get_ydata()[0] for line in ax.get_lines()] == [3.5]  # between neuron 3 and 4
    ax = next(a for a in fig.axes if a.get_title() == "W_out1")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]


def test_lam_groups():
    lam = torch.tensor([1.0, 1.0, 0.0, 0.5, 1.0])
    assert lam_blocks(lam) == [
        ("key-value (λ=1)", 0, 2),
        ("query (λ=0)", 2, 3),
        ("0<λ<1", 3, 4),
        ("key-value (λ=1)", 4, 5),
    ]
    assert lam_blocks(torch.zeros(0)) == []
    near = torch.tensor([0.9999, 1e-5])  # a trained network's lam is rarely exact
    assert lam_blocks(near) == [("0<λ<1", 0, 2)]


def test_bad_groups_raise():
    rnn = construct_rnn(random_attention(2, seed=0), "full")
    with pytest.raises(ValueError, match="hidden_groups"):
        plot_construction(rnn, hidden_groups=[("x", 0, 99)])
    with pytest.raises(ValueError, match="hidden_groups"):
        plot_construction(rnn, hidden_groups="auto")
    with pytest.raises(TypeError, match="GatedRNN"):
        plot_construction(random_attention(2, seed=0))


def test_construction_counts_and_plot():
    rows = construction_counts([4, 12])
    assert rows[0]["symmetric_n"] == 14 and rows[0]["attention_params"] == 48
    assert rows[1]["low_rank_n"] == 42
    assert rows[1]["full_params"] == parameter_count("full", 12)
    assert rows[1]["side_n"] == neuron_count("side", 12)["n"]
    fig = plot_counts([1, 2, 3])
    assert len(fig.axes) == 2 and len(fig.axes[1].get_lines()) == 5  # 4 variants + attention


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    matplotlib.pyplot.close("all")


def test_decay_matrices_draw_lam_to_the_lag_below_the_diagonal():
    lam = torch.tensor([1.0, 0.5, 0.0], dtype=torch.float64)
    fig = plot_decay_matrices(lam, 4)
    assert [ax.get_title() for ax in fig.axes] == [f"L for λ = {v:g}" for v in (1, 0.5, 0)]
    shown = np.asarray(fig.axes[1].images[0].get_array())
    t, s = np.indices((4, 4))
    assert np.allclose(shown, np.where(s <= t, 0.5 ** (t - s), 0.0))
    assert np.array_equal(np.asarray(fig.axes[2].images[0].get_array()), np.eye(4))
    matplotlib.pyplot.close(fig)
