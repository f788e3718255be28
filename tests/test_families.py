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
