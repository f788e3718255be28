"""The family registry: every family's fast forward equals its reference loop through the registry
(float64), and widths match parameter counts."""

import pytest
import torch

from gated_attention.models import FAMILIES, family, parameter_count, width_for


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_family_fast_equals_reference(name):
    fam = family(name)
    g = torch.Generator().manual_seed(3)
    p = fam.init(5, 3, 6, 2, g, torch.float64)
    x = torch.randn(2, 4, 7, 5, generator=g, dtype=torch.float64)
    y = fam.forward(x, p)
    assert y.shape == (2, 4, 7, 3)
    torch.testing.assert_close(y, fam.reference(x, p), rtol=1e-10, atol=1e-10)
    assert set(fam.no_decay) <= set(p)  # no_decay names real parameters


def test_gated_members_differ_and_are_seeded():
    fam = family("gated")
    p1 = fam.init(4, 4, 5, 2, torch.Generator().manual_seed(0))
    p2 = fam.init(4, 4, 5, 2, torch.Generator().manual_seed(0))
    assert all(torch.equal(p1[k], p2[k]) for k in p1)
    assert not torch.equal(p1["W_in1"][0], p1["W_in1"][1])


def test_width_for_matches_counts():
    for name in FAMILIES:
        fam = family(name)
        w = width_for(fam, 6, 6, 3000)
        g = torch.Generator().manual_seed(0)
        count = parameter_count(fam.init(6, 6, w, 1, g))
        lower = parameter_count(fam.init(6, 6, max(w - 1, 1), 1, g))
        upper = parameter_count(fam.init(6, 6, w + 1, 1, g))
        assert abs(count - 3000) <= abs(lower - 3000) and abs(count - 3000) <= abs(upper - 3000)
    with pytest.raises(ValueError, match="unknown family 'rnn'"):
        family("rnn")


COMPILED = [name for name in FAMILIES if family(name).compiled is not None]


def test_the_cell_and_lru_families_have_a_compiled_form():
    assert set(COMPILED) == {"lstm", "gru", "lru", "lru_inout", "lru_inout_mlp"}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")  # torch.compile's own deprecation and internal warnings
@pytest.mark.parametrize("name", COMPILED)
def test_compiled_loop_equals_reference_with_its_gradient(name):
    """The compiled cell loop (torch.compile) is the same map as torch's own cell, float64,
    and so is its gradient (the backward AOTAutograd makes)."""
    fam = family(name)
    g = torch.Generator().manual_seed(5)
    p = {k: v.requires_grad_() for k, v in fam.init(3, 2, 4, 2, g, torch.float64).items()}
    x = torch.randn(2, 3, 5, 3, generator=g, dtype=torch.float64)
    y = fam.compiled(x, p)
    ref = fam.reference(x, p)
    torch.testing.assert_close(y, ref, rtol=1e-10, atol=1e-10)
    w = torch.randn(y.shape, generator=g, dtype=torch.float64)
    grads = torch.autograd.grad((y * w).sum(), list(p.values()))
    want = torch.autograd.grad((ref * w).sum(), list(p.values()))
    for a, b in zip(grads, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)


def test_a_compiled_loop_without_a_compiler_says_so(monkeypatch):
    from gated_attention.models import shell

    monkeypatch.setattr(shell.shutil, "which", lambda name: None)
    loop = shell.compile_loop(lambda u, params: u)
    with pytest.raises(RuntimeError, match="needs a C\\+\\+ compiler.*compile_cells=False"):
        loop(torch.zeros(1), {})


def test_the_run_trains_through_the_compiled_loop_only_when_asked():
    from gated_attention.experiments import architectures_config

    quick = architectures_config("quick", "teacher")
    paper = architectures_config("paper", "teacher")
    assert not quick.compile_cells and paper.compile_cells
    for name in ("gated", "lstm", "gru", "lru"):
        fam = family(name)
        if name == "gated":
            assert quick.forward(fam) is None and paper.forward(fam) is None
            continue
        assert quick.forward(fam) is fam.forward
        assert paper.forward(fam) is (fam.compiled or fam.forward)
