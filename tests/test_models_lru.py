"""The LRU family (Sec. 4.3, App. B.1): fast forms (complex, and real for the compiler) against
the reference loop, one LRU layer against an explicit complex recurrence, gradients, parameter
counts, seeded initialisation."""

import math

import pytest
import torch

from gated_attention.models.lru import (
    LRU,
    LRU_IN_OUT,
    LRU_IN_OUT_MLP,
    closed_form_count,
    decay_matrix,
    decay_parts,
    forward_real,
    lam_from,
    lru_layer,
    mlp_hidden_size,
)
from gated_attention.models.shell import parameter_count

FAMILIES = [LRU, LRU_IN_OUT, LRU_IN_OUT_MLP]
ids = [f.name for f in FAMILIES]
E, d_in, d_out, H, B, T = 3, 3, 2, 6, 4, 9


def draw(family, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    P = family.init(d_in, d_out, H, E, g, dtype)
    x = torch.randn(E, B, T, d_in, generator=g, dtype=torch.float64).to(dtype)
    return P, x


def nudged(P, key, member=1, delta=1e-3):
    """A copy of P with one number of one member moved by delta."""
    Q = {k: v.clone() for k, v in P.items()}
    Q[key][member].view(-1)[0] += delta
    return Q


FORMS = {"complex": lambda fam: fam.forward, "real": lambda fam: forward_real}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("family", FAMILIES, ids=ids)
def test_fast_forward_equals_reference_loop(family, form):
    P, x = draw(family)
    assert not torch.equal(P["l1_B_re"][0], P["l1_B_re"][1])  # members have their own weights
    y = FORMS[form](family)(x, P)
    assert y.shape == (E, B, T, d_out) and y.dtype == torch.float64
    assert (y - family.reference(x, P)).abs().max() < 1e-10
    # twin: one phase of member 1 moved; the loop sees it, only in member 1
    diff = (y - family.reference(x, nudged(P, "l1_theta"))).abs().amax(dim=(1, 2, 3))
    assert diff[1] > 1e-7 and diff[0] < 1e-10 and diff[2] < 1e-10


@pytest.mark.parametrize("family", FAMILIES, ids=ids)
def test_every_parameter_reaches_the_output(family):
    P, x = draw(family)
    y = family.forward(x, P)
    for key in P:
        assert (family.forward(x, nudged(P, key, delta=1e-2)) - y).abs().max() > 1e-9, key


def test_one_layer_is_the_explicit_complex_recurrence():
    """h_t = lam h_{t-1} + gamma B v_t, y_t = Re(C h_t) + D v_t, written with complex numbers."""
    P, _ = draw(LRU_IN_OUT)
    v = torch.randn(E, B, T, H, generator=torch.Generator().manual_seed(5), dtype=torch.float64)

    def explicit(normalise=True):
        lam = torch.exp(-torch.exp(P["l1_nu"]) + 1j * torch.exp(P["l1_theta"]))  # (E, N)
        gamma = torch.sqrt(1 - lam.abs() ** 2) if normalise else torch.ones_like(lam.real)
        Bc, Cc = P["l1_B_re"] + 1j * P["l1_B_im"], P["l1_C_re"] + 1j * P["l1_C_im"]
        h = torch.zeros(E, B, H, dtype=torch.complex128)
        ys = []
        for t in range(T):
            vt = v[:, :, t].to(torch.complex128)  # (E, B, H)
            h = lam[:, None] * h + gamma[:, None] * torch.einsum("enh,ebh->ebn", Bc, vt)
            y = torch.einsum("ehn,ebn->ebh", Cc, h).real + P["l1_D"][:, None] * v[:, :, t]
            ys.append(y)
        return torch.stack(ys, dim=2)

    y = lru_layer(v, P, 1)
    assert (y - explicit()).abs().max() < 1e-10
    assert (y - explicit(normalise=False)).abs().max() > 1e-2  # twin: gamma left out


def test_decay_matrix_limits_are_exact():
    nu = torch.tensor([[40.0, -40.0]], dtype=torch.float64)
    theta = torch.tensor([[0.3, -40.0]], dtype=torch.float64)
    L = decay_matrix(nu, theta, 5)  # (1, 5, 5, 2)
    eye = torch.eye(5, dtype=torch.complex128)
    assert torch.equal(L[0, :, :, 0], eye)  # lam = 0: only lam^0 = 1 survives
    assert torch.equal(L[0, :, :, 1].real, torch.ones(5, 5, dtype=torch.float64).tril())
    assert torch.equal(lam_from(nu, theta)[0].abs(), torch.tensor([0.0, 1.0], dtype=torch.float64))
    assert not torch.equal(decay_matrix(nu, theta + 40, 5)[0, :, :, 1].real, L[0, :, :, 1].real)
    R = decay_parts(nu, theta, 5)  # (1, 5, 2, 5, 2): the same in real arithmetic, as exact
    assert torch.equal(R[0, :, 0, :, 0], eye.real) and torch.equal(R[0, :, 1, :, 0], 0 * eye.real)
    assert torch.equal(R[0, :, 0, :, 1], L[0, :, :, 1].real)
    nu, theta = torch.tensor([[-0.7, 0.2]]), torch.tensor([[0.4, -1.3]])
    L, R = decay_matrix(nu, theta, 6), decay_parts(nu, theta, 6)
    assert torch.allclose(R[:, :, 0], L.real, atol=1e-6) and torch.allclose(
        R[:, :, 1], L.imag, atol=1e-6
    )
    assert R[:, :, 1].abs().max() > 0.1  # the imaginary parts are not left at 0


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("family", FAMILIES, ids=ids)
def test_gradients_of_fast_and_reference_agree(family, form):
    P, x = draw(family)
    w = torch.randn(E, B, T, d_out, generator=torch.Generator().manual_seed(7), dtype=x.dtype)

    def grads(forward, P):
        Q = {k: v.clone().requires_grad_(True) for k, v in P.items()}
        g = torch.autograd.grad((forward(x, Q) * w).sum(), list(Q.values()))
        return dict(zip(Q, g, strict=True))

    fast, ref = grads(FORMS[form](family), P), grads(family.reference, P)
    for k in P:
        assert (fast[k] - ref[k]).abs().max() < 1e-9 * (1 + ref[k].abs().max()), k
    twin = grads(family.reference, nudged(P, "l1_nu"))  # the check can fail
    assert max((fast[k] - twin[k]).abs().max() for k in P) > 1e-6


@pytest.mark.parametrize("family", FAMILIES, ids=ids)
@pytest.mark.parametrize("width", [1, 5, 16])
def test_parameter_count_is_the_closed_form(family, width):
    P = family.init(6, 4, width, 2, torch.Generator().manual_seed(0))
    assert parameter_count(P) == closed_form_count(family.name, 6, 4, width)


def test_closed_forms_by_hand():
    # d_in = d_out = 6, H = 10: shell 10 * 7 + 6 * 11 = 136
    assert closed_form_count("lru", 6, 6, 10) == 12 * 100 + 100 + 136 == 1436
    assert closed_form_count("lru_inout", 6, 6, 10) == 8 * 100 + 70 + 136 == 1006
    assert closed_form_count("lru_inout_mlp", 6, 6, 10) == 1006


@pytest.mark.parametrize("width", range(1, 65))
def test_mlp_ablation_has_the_glu_count(width):
    """An MLP H -> M -> H (2 H M + M + H) replaces a GLU H -> H (2 H^2 + 2 H): M = H exactly."""
    M = mlp_hidden_size(width)
    assert 2 * width * M + M + width == 2 * width**2 + 2 * width
    assert M == width


def test_mlp_family_has_exactly_the_in_out_count():
    g = torch.Generator().manual_seed(0)
    glu, mlp = LRU_IN_OUT.init(6, 6, 12, 1, g), LRU_IN_OUT_MLP.init(6, 6, 12, 1, g)
    assert parameter_count(mlp) == parameter_count(glu)
    assert mlp["l1_mlp_in_W1"].shape == (1, 12, 12) and "l1_W_3" not in mlp


@pytest.mark.parametrize("family", FAMILIES, ids=ids)
def test_seeded_init_is_reproducible(family):
    a, b, c = (family.init(3, 2, 5, 2, torch.Generator().manual_seed(s)) for s in (4, 4, 5))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)
    f32 = family.init(3, 2, 5, 2, torch.Generator().manual_seed(4), torch.float32)
    assert all(v.dtype == torch.float32 for v in f32.values())
    assert all(torch.allclose(f32[k].double(), a[k], rtol=1e-6, atol=1e-6) for k in a)
    x = torch.randn(2, 1, 4, 3)
    assert family.forward(x, f32).dtype == torch.float32


def test_ring_initialisation_and_no_decay():
    P = LRU.init(3, 2, 400, 2, torch.Generator().manual_seed(0))
    lam = lam_from(P["l1_nu"], P["l1_theta"])
    assert lam.abs().max() <= 0.99 + 1e-12 and lam.abs().min() >= 0.0
    assert lam.angle().min() >= 0 and lam.angle().max() <= math.pi / 10 + 1e-12
    assert 0.45 < (lam.abs() ** 2).mean() / 0.99**2 < 0.55  # |lam|^2 uniform on [0, 0.99^2]
    assert set(LRU.no_decay) == {"l1_nu", "l1_theta", "l2_nu", "l2_theta"} <= P.keys()
    assert set(LRU_IN_OUT.no_decay) == {"l1_nu", "l1_theta"} == set(LRU_IN_OUT_MLP.no_decay)
    assert [f.label for f in FAMILIES] == ["LRU (2 layers)", "LRU In+Out", "LRU In+Out (MLP)"]
