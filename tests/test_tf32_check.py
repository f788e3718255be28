"""The TF32 emulation: the rounding, the products it cuts (forward and backward), and a run
compared in both precisions."""

import json

import pytest
import torch

from lab.tf32_check import (
    TF32Products,
    compare,
    format_compare,
    order_flips,
    seed_flips,
    tf32,
)


def test_tf32_keeps_ten_mantissa_bits_rounding_toward_zero():
    x = torch.tensor([1.0, 1 + 2**-10, 1 + 2**-11, -(1 + 2**-10 + 2**-11), 3.0, 0.0])
    want = torch.tensor([1.0, 1 + 2**-10, 1.0, -(1 + 2**-10), 3.0, 0.0])
    assert torch.equal(tf32(x), want)
    spec = torch.tensor([float("inf"), float("-inf"), float("nan")])
    assert torch.equal(tf32(spec)[:2], spec[:2]) and bool(tf32(spec)[2].isnan())


def test_tf32_refuses_other_dtypes():
    with pytest.raises(TypeError, match="float32"):
        tf32(torch.ones(3, dtype=torch.float64))


def test_tf32_of_a_random_tensor_is_within_one_tf32_step_and_idempotent():
    x = torch.randn(1000, generator=torch.Generator().manual_seed(0))
    t = tf32(x)
    assert bool(((x - t).abs() <= x.abs() * 2**-10).all()) and bool((t.abs() <= x.abs()).all())
    assert torch.equal(tf32(t), t) and not torch.equal(t, x)


def test_products_forward_and_backward_multiply_the_cut_factors():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(4, 6, 5, generator=g, requires_grad=True)
    b = torch.randn(4, 5, 3, generator=g)
    w, bias = torch.randn(3, 5, generator=g), torch.randn(3, generator=g)
    with TF32Products() as mode:
        y = torch.bmm(a, b)
        z = torch.nn.functional.linear(a, w, bias)
        (y.sum() + z.sum()).backward()
    assert mode.count >= 3  # bmm, the linear's product, the backward's products
    assert torch.equal(y, torch.bmm(tf32(a.detach()), tf32(b)))
    want_z = tf32(a.detach()).reshape(-1, 5) @ tf32(w).T + bias
    assert torch.allclose(z.reshape(-1, 3), want_z, rtol=0, atol=1e-6)
    assert not torch.allclose(y, torch.bmm(a.detach(), b), rtol=0, atol=1e-6)
    # the backward's products: dL/da = ones @ tf32(b)^T (the bmm) + ones @ tf32(w) (the linear)
    ones = torch.ones(4, 6, 3)
    want_grad = ones @ tf32(b).transpose(1, 2) + ones @ tf32(w)
    assert torch.allclose(a.grad, want_grad, rtol=0, atol=1e-5)
    assert not torch.allclose(a.grad, ones @ b.transpose(1, 2) + ones @ w, rtol=0, atol=1e-5)


def test_float64_products_are_left_as_they_are():
    a = torch.randn(3, 3, dtype=torch.float64)
    with TF32Products() as mode:
        c = a @ a
    assert mode.count == 0 and torch.equal(c, a @ a)


def test_compare_trains_a_smoke_run_in_both_precisions_and_reports_the_change():
    r = compare("how-many-neurons-A", "smoke")
    assert r["products"] > 0
    assert r["float32"].shape == r["tf32"].shape and r["float32"].numel() > 1
    assert bool((r["change"] > 0).any())  # the cut factors move the losses
    assert float(r["change"].max()) < 0.05  # by rounding, not by another run
    text = format_compare(r)
    assert "how-many-neurons-A (smoke)" in text and "largest" in text


def test_order_flips_counts_the_pairs_of_rows_ordered_otherwise():
    a = torch.tensor([[1.0, 1.2], [2.0, 2.2], [3.0, 3.2]])  # row means 1.1, 2.1, 3.1
    assert order_flips(a, a) == (0, 3)
    b = torch.tensor([[2.5, 2.5], [2.0, 2.2], [3.0, 3.2]])  # 2.5 > 2.1: one pair turns
    assert order_flips(a, b) == (1, 3)
    assert order_flips(torch.tensor([3.0, 2.0, 1.0]), torch.tensor([1.0, 2.0, 3.0])) == (3, 3)
    with pytest.raises(ValueError, match="shapes"):
        order_flips(a, a[:2])


def test_the_command_writes_each_comparison_as_json(tmp_path, capsys):
    from lab.tf32_check import main

    out = tmp_path / "tf32.json"
    assert main(["how-many-neurons-A", "--profile", "smoke", "--out", str(out)]) == 0
    (r,) = json.loads(out.read_text())
    assert r["name"] == "how-many-neurons-A" and len(r["change"]) == len(r["float32"]) > 1
    assert "ordered otherwise" in capsys.readouterr().out


def test_seed_flips_compare_each_pair_of_seeds():
    loss = torch.tensor([[1.0, 3.0, 1.0], [2.0, 2.0, 2.0], [3.0, 1.0, 3.0]])
    assert seed_flips(loss) == [(3, 3), (0, 3), (3, 3)]  # seed 1 orders the rows backwards
    assert seed_flips(torch.tensor([1.0, 2.0])) == []
