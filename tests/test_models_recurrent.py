"""The recurrent families of Sec. 4.3 (dense gated RNN, LSTM, GRU, Mamba-style): fast forward ==
reference loop in float64, parameter counts, initialisation."""

import math

import pytest
import torch

from gated_attention.models import dense_rnn, gru, lstm, mamba
from gated_attention.models.shell import parameter_count

MODULES = {"dense": dense_rnn, "lstm": lstm, "gru": gru, "mamba": mamba}
FAMILIES = {
    "dense": dense_rnn.DENSE,
    "lstm": lstm.LSTM,
    "gru": gru.GRU,
    "mamba": mamba.MAMBA,
}
D_IN, D_OUT, WIDTH, E = 3, 2, 5, 3

# one weight per family whose change any correct reference must see (member 2 only)
PERTURB = {
    "dense": ("A", (2, 0, 1)),  # off-diagonal: only a dense recurrence reads it
    "lstm": ("W_hh", (2, 3, 1)),  # input gate's recurrent weight
    "gru": ("b_hh", (2, 2 * WIDTH + 1)),  # b_hn, inside the reset gate's product
    "mamba": ("W_C", (2, 1, 2)),  # the query-like read-out of the state
}


def make_params(name: str, seed: int = 0) -> dict[str, torch.Tensor]:
    """E members with different weights; the dense A gets off-diagonal entries (a trained A)."""
    g = torch.Generator().manual_seed(seed)
    params = FAMILIES[name].init(D_IN, D_OUT, WIDTH, E, g, torch.float64)
    if name == "dense":
        params["A"] = params["A"] + 0.1 * torch.randn(
            E, WIDTH, WIDTH, generator=g, dtype=torch.float64
        )
    return params


def inputs(T: int = 9, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(E, 4, T, D_IN, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("T", [1, 2, 9, 32])
def test_forward_equals_reference(name, T):
    family, params, x = FAMILIES[name], make_params(name), inputs(T)
    for k, v in params.items():  # the members really differ (A_log, Dskip start equal)
        assert not torch.equal(v[0], v[1]) or k in ("A_log", "Dskip"), k
    y = family.forward(x, params)
    y_ref = family.reference(x, params)
    assert y.shape == (E, 4, T, D_OUT) and y.dtype == torch.float64
    assert (y - y_ref).abs().max() < 1e-10 * max(1.0, y_ref.abs().max())


@pytest.mark.parametrize("name", FAMILIES)
def test_perturbed_twin_differs_in_that_member_only(name):
    family, params, x = FAMILIES[name], make_params(name), inputs()
    key, index = PERTURB[name]
    twin = {k: v.clone() for k, v in params.items()}
    twin[key][index] += 1e-3
    y, y_twin = family.forward(x, params), family.reference(x, twin)
    assert (y[2] - y_twin[2]).abs().max() > 1e-6
    assert (y[:2] - y_twin[:2]).abs().max() < 1e-10  # the other members are untouched


@pytest.mark.parametrize("name", FAMILIES)
def test_gradients_of_fast_and_reference_agree(name):
    family, x = FAMILIES[name], inputs(T=7)
    grads = []
    for forward in (family.forward, family.reference):
        params = {k: v.clone().requires_grad_() for k, v in make_params(name).items()}
        w = torch.linspace(-1, 1, D_OUT, dtype=torch.float64)
        (forward(x, params) ** 2 * w).sum().backward()
        grads.append({k: v.grad for k, v in params.items()})
    for k in grads[0]:
        scale = grads[1][k].abs().max()
        assert scale > 0, k  # every parameter reaches the output
        assert (grads[0][k] - grads[1][k]).abs().max() < 1e-10 * scale, k


SCANS = {
    "lstm": (lstm.lstm_states, lstm.lstm_states_scan),
    "gru": (gru.gru_states, gru.gru_states_scan),
}


@pytest.mark.parametrize("name", SCANS)
def test_hand_written_backward_equals_autograd_of_the_loop(name):
    """The compiled form's recurrence (``LSTMScan``, ``GRUScan``): its states and every
    parameter's gradient are those of the plain loop through autograd, float64."""
    loop, scan = SCANS[name]
    u = torch.randn(E, 4, 6, WIDTH, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    w = torch.randn(E, 4, 6, WIDTH, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    out = []
    for states in (loop, scan):
        params = {k: v.clone().requires_grad_() for k, v in make_params(name).items()}
        u_ = u.clone().requires_grad_()
        h = states(u_, params)
        (h * w).sum().backward()
        out.append((h, u_.grad, {k: v.grad for k, v in params.items() if v.grad is not None}))
    (h0, du0, g0), (h1, du1, g1) = out
    assert (h0 - h1).abs().max() < 1e-12
    assert (du0 - du1).abs().max() < 1e-12 * du0.abs().max()
    assert g0.keys() == g1.keys() == {"W_ih", "W_hh", "b_ih", "b_hh"}
    for k in g0:
        assert (g0[k] - g1[k]).abs().max() < 1e-12 * g0[k].abs().max(), k


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("width", [1, 4, 7])
def test_parameter_count_matches_closed_form(name, width):
    g = torch.Generator().manual_seed(0)
    params = FAMILIES[name].init(D_IN, D_OUT, width, 2, g, torch.float64)
    formula = MODULES[name].parameter_count_formula(D_IN, D_OUT, width)
    assert parameter_count(params) == formula
    assert sum(v[0].numel() for v in params.values()) == formula


def test_parameter_count_values():
    # the closed forms written out for d_in = 3, d_out = 2, width = 5
    assert dense_rnn.parameter_count_formula(3, 2, 5) == 2 * 5 * 4 + 3 * 25 + 2 * 5
    assert lstm.parameter_count_formula(3, 2, 5) == 5 * 4 + 4 * 5 * 10 + 8 * 5 + 2 * 6
    assert gru.parameter_count_formula(3, 2, 5) == 5 * 4 + 3 * 5 * 10 + 6 * 5 + 2 * 6
    assert mamba.parameter_count_formula(3, 2, 5, 4) == 2 * 5 * 4 + 25 + 10 + 3 * 4 * 5 + 2 * 6


@pytest.mark.parametrize("name, cls", [("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)])
def test_parameter_count_equals_torch_modules(name, cls):
    H = N = WIDTH
    torch_count = sum(
        p.numel()
        for m in (torch.nn.Linear(D_IN, H), cls(H, N), torch.nn.Linear(N, D_OUT))
        for p in m.parameters()
    )
    params = make_params(name)
    assert parameter_count(params) == torch_count
    cell = cls(H, N)
    assert params["W_ih"].shape[1:] == cell.weight_ih_l0.shape
    assert params["W_hh"].shape[1:] == cell.weight_hh_l0.shape


@pytest.mark.parametrize("name", FAMILIES)
def test_init_is_reproducible_and_follows_dtype(name):
    a, b, c = (make_params(name, seed) for seed in (0, 0, 1))
    assert a.keys() == b.keys() == c.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)
    assert set(FAMILIES[name].no_decay) <= set(a)
    g = torch.Generator().manual_seed(0)
    p32 = FAMILIES[name].init(D_IN, D_OUT, WIDTH, E, g, torch.float32)
    assert all(v.dtype == torch.float32 for v in p32.values())
    y = FAMILIES[name].forward(inputs().float(), p32)
    assert y.dtype == torch.float32 and torch.isfinite(y).all()


def test_initial_distributions():
    g = torch.Generator().manual_seed(0)
    p = dense_rnn.init(D_IN, D_OUT, 50, 2, g)
    lam = torch.diagonal(p["A"], dim1=-2, dim2=-1)
    assert torch.equal(p["A"], torch.diag_embed(lam)) and 0 <= lam.min() and lam.max() <= 1
    bound = 1 / math.sqrt(50)
    for mod in (lstm, gru):
        p = mod.init(D_IN, D_OUT, 50, 2, torch.Generator().manual_seed(0))
        for k in ("W_ih", "W_hh", "b_ih", "b_hh"):
            assert p[k].abs().max() <= bound and p[k].abs().max() > 0.9 * bound, (mod, k)
    p = mamba.init(D_IN, D_OUT, 50, 2, torch.Generator().manual_seed(0), n_state=3)
    assert torch.allclose(-torch.exp(p["A_log"]), -torch.tensor([1.0, 2.0, 3.0]).double())
    dt = torch.nn.functional.softplus(p["b_Delta"])
    assert dt.min() >= 1e-3 - 1e-12 and dt.max() <= 1e-1 + 1e-12
    assert torch.equal(p["Dskip"], torch.ones(2, 50, dtype=torch.float64))


def test_scans_are_exact_at_the_edges():
    # perfect memory (a = 1, A = I) is a cumulative sum; a = 0 forgets everything
    u = inputs(T=11)[..., :2].clone()  # (E, B, T, 2)
    eye = torch.eye(2, dtype=torch.float64).expand(E, 2, 2)
    assert torch.allclose(dense_rnn.dense_scan(u, eye), u.cumsum(2), atol=1e-13)
    ones = torch.ones_like(u)
    assert torch.allclose(mamba.diagonal_scan(ones, u), u.cumsum(2), atol=1e-13)
    assert torch.equal(mamba.diagonal_scan(torch.zeros_like(u), u), u)
