"""App. B / Tables 3-4: a Mamba-style layer implements linear attention exactly, an LSTM in the
linearised limit eps -> 0 (slope 2), and what a GRU's gates can do (App. B.4)."""

import pytest
import torch
from torch.func import functional_call

from gated_attention.constructions import linearised
from gated_attention.constructions.gru import (
    gru_findings,
    gru_kv_error,
    gru_stack_forward,
    gru_two_layer_construction,
    gru_two_layer_error,
    hessian_check,
)
from gated_attention.constructions.linearised import (
    attention_output,
    error_slope,
    random_inputs,
    relative_error,
)
from gated_attention.constructions.lstm import lstm_construction, lstm_error
from gated_attention.constructions.mamba import mamba_construction, mamba_error
from gated_attention.models import lstm, mamba
from gated_attention.models.attention import random_attention

EPS = [1e-3, 3e-3, 1e-2, 3e-2]  # above the rounding floor (~1e-16 T / eps^2 relative)


@pytest.fixture(scope="module")
def attention():
    return random_attention(4, seed=0)


# ---------------------------------------------------------------- shared helpers


def test_error_slope_and_pair_product():
    eps = [1e-3, 1e-2, 1e-1]
    assert error_slope(eps, [3 * e**2 for e in eps]) == pytest.approx(2.0, abs=1e-12)
    assert error_slope(eps, [5 * e for e in eps]) == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError):
        error_slope(eps, [1.0, 0.0, 1.0])
    a = torch.tensor([1e-3, -2e-3], dtype=torch.float64)
    b = torch.tensor([3e-3, 1e-3], dtype=torch.float64)
    pair = linearised.pair_product(a, b)
    odd_part = torch.tanh(a / 2) / 2  # S(a) = sigmoid(a) - 1/2, without the cancellation
    assert torch.allclose(pair, 2 * odd_part * torch.tanh(b), rtol=1e-9)
    assert torch.allclose(pair, a * b / 2, rtol=1e-5)  # the 1/2 tanh(b) terms cancel


def test_attention_output_matches_the_layer(attention):
    x = random_inputs(4, seed=3)
    assert (attention_output(attention, x) - attention(x)).abs().max() < 1e-12


# ---------------------------------------------------------------- Mamba (Table 3, exact)


def test_mamba_construction_is_exact(attention):
    assert mamba_error(attention) < 1e-8
    assert mamba_error(attention, T=5, seed=7) < 1e-8
    params = mamba_construction(attention)
    x = random_inputs(4, B=2, T=6, seed=1)[None]
    assert (mamba.forward(x, params) - mamba.reference(x, params)).abs().max() < 1e-10
    shapes = mamba.init(4, 4, 8, 1, torch.Generator().manual_seed(0), n_state=4)
    assert {k: v.shape for k, v in params.items()} == {k: v.shape for k, v in shapes.items()}


def test_mamba_perturbed_twins_fail(attention):
    twin = mamba_construction(attention)
    twin["W_B"][0, 1, 5] += 1e-3  # one key weight
    assert mamba_error(attention, twin) > 1e-6
    swapped = mamba_construction(attention)
    swapped["W_B"], swapped["W_C"] = swapped["W_C"], swapped["W_B"]  # keys <-> queries
    assert mamba_error(attention, swapped) > 1e-6
    leaky = mamba_error(attention, A_log=-10.0)  # exp(Delta A) < 1: the memory leaks
    assert leaky > 1e-6 and mamba_error(attention, A_log=-30.0) < 1e-8


# ---------------------------------------------------------------- LSTM (Table 4, eps -> 0)


def test_lstm_error_falls_as_eps_squared(attention):
    errors = [lstm_error(attention, e) for e in EPS]
    assert all(a < b for a, b in zip(errors, errors[1:], strict=False))
    assert abs(error_slope(EPS, errors) - 2.0) < 0.3
    assert errors[0] < 1e-4


def test_lstm_construction_runs_in_torch_lstm(attention):
    params = lstm_construction(attention, 1e-2)
    x = random_inputs(4, B=2, T=10, seed=2)
    y_torch = lstm.reference(x[None], params)[0]  # torch.nn.LSTM with the weights loaded
    assert relative_error(y_torch, lstm.forward(x[None], params)[0]) < 1e-9
    assert relative_error(y_torch, attention_output(attention, x)) < 1e-2


@pytest.mark.parametrize("twin", ["forget_bias", "pair_sign"])
def test_lstm_perturbed_twins_do_not_converge(attention, twin):
    for eps in (1e-3, 1e-2):
        if twin == "forget_bias":  # f = sigmoid(3) = 0.95: the memory leaks
            params = lstm_construction(attention, eps, forget_bias=3.0)
        else:  # one cell's output-pair sign flipped: the 1/2 of its gate no longer cancels
            params = lstm_construction(attention, eps)
            params["W_o"][0, :, 1] *= -1
        assert lstm_error(attention, eps, params) > 1e-2


# ---------------------------------------------------------------- GRU (App. B.4)


def test_gru_step_multiplies_two_input_projections():
    g = torch.Generator().manual_seed(5)
    v, k = torch.randn(2, 4, generator=g, dtype=torch.float64)
    check = hessian_check(v, k, beta=1.5)
    assert check["relative_deviation"] < 1e-12
    assert check["eig_min"] < 0 < check["eig_max"]  # indefinite: no single tanh unit gives it


def test_gru_findings(attention):
    f = gru_findings(attention)
    assert f["random_cross_term_max"] > 1e-3
    assert f["prescribed_product_deviation"] < 1e-12
    assert abs(f["kv_slope"] - 2.0) < 0.3 and f["kv_errors"][-1] < 1e-4
    assert abs(f["two_layer_slope"] - 2.0) < 0.3 and f["two_layer_errors"][-1] < 1e-3
    assert f["one_layer_accumulates_M"] and f["query_product_achieved"]
    assert f["units_per_layer"] == 2 * 16 + 4


def test_gru_twins_fail(attention):
    assert gru_kv_error(attention, 1e-3, delta=0.1) > 1e-2  # z not ~ 1: no memory
    stack = gru_two_layer_construction(attention, 1e-3)
    stack["W_o"][:, 32:] = 0.0  # drop the copy units: y = P_t, not P_t - P_{t-1}
    x = random_inputs(4)
    y = gru_stack_forward(x, stack)
    assert relative_error(y, attention_output(attention, x)) > 1e-2
    assert gru_two_layer_error(attention, 1e-3) < 1e-3


def test_gru_stack_is_a_torch_two_layer_gru(attention):
    stack = gru_two_layer_construction(attention, 1e-2)
    N = stack["W_o"].shape[1]
    cell = torch.nn.GRU(4, N, num_layers=2, batch_first=True, dtype=torch.float64)
    names = {"W_ih": "weight_ih", "W_hh": "weight_hh", "b_ih": "bias_ih", "b_hh": "bias_hh"}
    weights = {
        f"{names[k]}_l{i}": v for i, layer in enumerate(stack["layers"]) for k, v in layer.items()
    }
    x = random_inputs(4, B=2, T=12, seed=4)
    h_torch, _ = functional_call(cell, weights, (x,))
    y_torch = h_torch @ stack["W_o"].T + stack["b_o"]
    # the readout amplifies by 1 / (2 delta eps^2) = 5e7: compare relative to the output
    assert relative_error(gru_stack_forward(x, stack), y_torch) < 1e-9
    assert relative_error(y_torch, attention_output(attention, x)) < 0.1
