"""The real Mamba and LRU blocks (models.mamba_block, models.lru_block): fast paths against their
step-by-step definitions (outputs and gradients, float64), and the constructions of
constructions.real_blocks: the Mamba block exact for d = 1..8 with and without projection biases,
two LRU blocks with error O(eps^2), with LayerNorm O(delta^2); perturbed twins fail."""

import pytest
import torch

from gated_attention.constructions import real_blocks as rb
from gated_attention.constructions.linearised import error_slope
from gated_attention.models import lru_block, mamba_block
from gated_attention.models.attention import LinearSelfAttention, random_attention
from gated_attention.models.shell import parameter_count

MAMBA_CONFIGS = [
    mamba_block.MambaBlockConfig(),
    mamba_block.MambaBlockConfig(n_state=3, dt_rank=2, d_conv=3, bias=True, conv_bias=False),
    mamba_block.MambaBlockConfig(n_state=2, d_conv=1),
]
LRU_CONFIGS = [
    lru_block.LRUBlockConfig(),
    lru_block.LRUBlockConfig(layers=1, n_hidden=3, norm="layer"),
    lru_block.LRUBlockConfig(layers=3, n_hidden=7),
]


def _check_forms(family_module, params, x, **kw):
    """forward and reference agree in value and in the gradient of every parameter."""
    params = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    outs, grads = [], []
    for fn in (family_module.forward, family_module.reference):
        y = fn(x, params, **kw)
        weights = torch.linspace(-1, 1, y.numel(), dtype=y.dtype).reshape(y.shape)
        g = torch.autograd.grad((y * weights).sum(), list(params.values()), allow_unused=True)
        outs.append(y.detach())
        grads.append(g)
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-12, atol=1e-12)
    for name, a, b in zip(params, *grads, strict=True):
        assert (a is None) == (b is None), name
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=name)


@pytest.mark.parametrize("config", MAMBA_CONFIGS)
def test_mamba_block_fast_path_matches_its_definition(config):
    g = torch.Generator().manual_seed(0)
    params = mamba_block.init(3, 2, 5, 2, g, config=config)
    x = torch.randn(2, 3, 9, 3, generator=g, dtype=torch.float64)
    _check_forms(mamba_block, params, x)
    assert parameter_count(params) == mamba_block.parameter_count_formula(3, 2, 5, config)


def test_mamba_block_convolution_is_causal():
    g = torch.Generator().manual_seed(1)
    params = mamba_block.init(2, 2, 4, 1, g)
    x = torch.randn(1, 2, 8, 2, generator=g, dtype=torch.float64)
    later = x.clone()
    later[:, :, 5:] += 1.0
    y, y_later = mamba_block.forward(x, params), mamba_block.forward(later, params)
    torch.testing.assert_close(y[:, :, :5], y_later[:, :, :5], rtol=0, atol=0)
    assert not torch.allclose(y[:, :, 5:], y_later[:, :, 5:])


@pytest.mark.parametrize("config", LRU_CONFIGS)
@pytest.mark.parametrize("gelu", ["tanh", "none"])
def test_lru_block_fast_path_matches_its_definition(config, gelu):
    g = torch.Generator().manual_seed(2)
    params = lru_block.init(3, 2, 5, 2, g, config=config)
    x = torch.randn(2, 3, 9, 3, generator=g, dtype=torch.float64)
    _check_forms(lru_block, params, x, gelu=gelu)
    assert parameter_count(params) == lru_block.parameter_count_formula(3, 2, 5, config)


def test_odd_pairs_hold_numerically_and_symbolically():
    s = torch.linspace(-20, 20, 4001, dtype=torch.float64)
    assert all(gap < 1e-13 for gap in rb.odd_pair_gaps(s).values())
    assert all(residual == 0 for residual in rb.symbolic_odd_pairs().values())


def rectangular(seed=3):
    """d = 3 inputs, d_k = 2, d_v = 4: no layout may assume d_v = d_k = d."""
    g = torch.Generator().manual_seed(seed)
    W_V, W_K, W_Q = (
        torch.randn(r, 3, generator=g, dtype=torch.float64) / 3**0.5 for r in (4, 2, 2)
    )
    return LinearSelfAttention(W_V=W_V, W_K=W_K, W_Q=W_Q)


@pytest.mark.parametrize("bias", [False, True])
def test_mamba_block_construction_is_exact(bias):
    for d in range(1, 9):
        teacher = random_attention(d, seed=d)
        assert rb.mamba_block_error(teacher, bias=bias) < 1e-12, d
    teacher = rectangular()
    params = rb.mamba_block_construction(teacher, bias=bias)
    assert rb.mamba_block_error(teacher, params) < 1e-12
    size = rb.mamba_block_size(3, 4, 2, bias=bias)
    assert params["A_log"].shape[1:] == (size["D"], size["N"])
    assert params["W_dt"].shape[-1] == size["R"]
    assert ("b_in" in params) == bias and "b_conv" in params  # as released: conv bias only
    # the construction holds in the block's definition, not only in its fast path
    x = torch.randn(2, 6, 3, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    with torch.no_grad():
        y = mamba_block.reference(x[None], params)[0]
    assert rb.relative_error(y, rb.attention_output(teacher, x)) < 1e-12


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("name", ["W_in", "W_x", "W_out", "w_conv"])
def test_a_perturbed_mamba_construction_fails(bias, name):
    """Twin: one weight nudged by 1e-3 must break exactness (the check can fail)."""
    teacher = random_attention(3, seed=3)
    params = rb.mamba_block_construction(teacher, bias=bias)
    nonzero = params[name].nonzero()[0].tolist()
    params[name][tuple(nonzero)] += 1e-3
    assert rb.mamba_block_error(teacher, params) > 1e-6


def test_mamba_block_without_bias_needs_the_gate_pairs():
    """A constant gate is impossible without b_in (silu(W_z x) = 0 at x = 0): dropping the gate
    pairs (s3 = -1 channels) leaves an error of order 1."""
    teacher = random_attention(3, seed=3)
    params = rb.mamba_block_construction(teacher)
    half = torch.arange(8 * 9) % 2 == 1  # s3 = -1
    params["W_out"][0, :, : 8 * 9][:, half] = 0.0
    assert rb.mamba_block_error(teacher, params) > 0.1


EPS = [1e-3, 3e-3, 1e-2, 3e-2, 1e-1]


@pytest.mark.parametrize("make", [lambda: random_attention(3, seed=1), rectangular])
def test_lru_block_error_falls_as_eps_squared(make):
    teacher = make()
    errors = [rb.lru_block_error(teacher, e, T=16) for e in EPS]
    assert abs(error_slope(EPS, errors) - rb.SLOPE) < 0.1
    assert errors[0] < 1e-5
    exact_gelu = [rb.lru_block_error(teacher, e, T=16, gelu="none") for e in EPS]
    assert max(abs(a / b - 1) for a, b in zip(errors, exact_gelu, strict=True)) < 1e-6


def test_lru_block_with_layer_norm_error_falls_as_delta_squared():
    teacher = random_attention(3, seed=1)
    deltas = [1e-6, 3e-6, 1e-5, 3e-5, 1e-4]
    errors = [rb.lru_block_error(teacher, 1e-4, norm="layer", delta=dl, T=16) for dl in deltas]
    assert abs(error_slope(deltas, errors) - rb.SLOPE) < 0.1
    with pytest.raises(ValueError):
        rb.lru_block_construction(teacher, 1e-2, delta=1e-3)


def test_a_perturbed_lru_block_construction_fails():
    teacher = random_attention(3, seed=1)
    params = rb.lru_block_construction(teacher, 1e-3)
    assert rb.relative_error(*_lru_outputs(teacher, params)) < 1e-5
    params["l2_B_re"][0, 0] *= 1 + 1e-3  # one key-value neuron's input, 0.1% off
    assert rb.relative_error(*_lru_outputs(teacher, params)) > 1e-5


def _lru_outputs(teacher, params):
    x = rb.random_inputs(teacher.d, B=4, T=16)
    with torch.no_grad():
        return lru_block.forward(x[None], params)[0], rb.attention_output(teacher, x)


@pytest.mark.parametrize("norm", [None, "layer"])
def test_lru_block_grows_at_most_linearly(norm):
    """The argument against an exact LRU block: along x -> a x its output grows at most as a,
    attention's as a^3, so the construction's relative error tends to 1 at large a."""
    teacher = random_attention(3, seed=1)
    delta = 1e-5 if norm else 1.0
    params = rb.lru_block_construction(teacher, 1e-2, norm=norm, delta=delta)
    x = rb.random_inputs(3, B=2, T=8)
    per_a = rb.growth(lru_block.forward, params, x, [1e5, 1e6, 1e7])
    assert per_a[2] <= 1.001 * per_a[1]  # |out| / a bounded (LayerNorm: falling): no a^3
    with torch.no_grad():
        y = lru_block.forward(1e6 * x[None], params)[0]
    assert rb.relative_error(y, rb.attention_output(teacher, 1e6 * x)) > 0.99


def test_mamba_block_convolution_is_torchs_depthwise_conv1d():
    """The block's convolution is torch's Conv1d with groups = D, padding K - 1, the first T
    outputs kept (as the Mamba paper's code calls it)."""
    g = torch.Generator().manual_seed(5)
    params = mamba_block.init(3, 2, 4, 1, g, config=mamba_block.MambaBlockConfig(d_conv=3))
    xi = torch.randn(1, 2, 7, 4, generator=g, dtype=torch.float64)
    ours = mamba_block._conv(xi, params)[0]  # (B, T, D)
    w, b = params["w_conv"][0][:, None], params["b_conv"][0]  # (D, 1, K), (D,)
    theirs = torch.nn.functional.conv1d(xi[0].transpose(1, 2), w, b, padding=2, groups=4)
    torch.testing.assert_close(ours, theirs[..., :7].transpose(1, 2), rtol=1e-14, atol=1e-14)


def test_table_3_weights_moved_into_the_real_block_fail():
    teacher = random_attention(4, seed=0)
    moved = rb.transplanted_mamba_construction(teacher)
    assert rb.mamba_block_error(teacher, moved) > 0.5


def test_cost_rows_are_the_built_constructions_counts():
    from gated_attention.readings import real_blocks as readings

    d = 3
    rows = {r.construction: r.parameters for r in readings.cost_rows(d)}
    teacher = random_attention(d, seed=0)
    for bias, name in ((True, "Mamba block, with biases"), (False, "Mamba block, as released")):
        built = rb.mamba_block_construction(teacher, bias=bias)
        assert parameter_count(built) == rows[name], name
    for norm, name in ((None, "LRU block (GELU)"), ("layer", "LRU block (GELU, LayerNorm)")):
        built = rb.lru_block_construction(teacher, 1e-2, norm=norm, delta=1e-3 if norm else 1.0)
        assert parameter_count(built) == rows[name], name
    assert rows["Mamba block, as released"] > rows["Mamba block, with biases"]


def test_the_learning_run_trains_both_blocks_side_by_side():
    from gated_attention.experiments.real_block_learning import real_block_learning_config
    from gated_attention.readings import real_blocks as readings

    config = real_block_learning_config("smoke")
    tensors, metrics = config.compute(progress=False)
    assert metrics["families"] == ["mamba", "mamba_block"]
    assert tensors["eval_loss"].shape == (2, len(config.seeds))
    assert torch.isfinite(tensors["eval_loss"]).all()
    assert (abs(tensors["counts"] - config.target) < 60).all()  # matched parameter counts
    rows = readings.learning_rows(tensors)
    assert [(r.width, r.params) for r in rows] == [
        (int(tensors["widths"][k]), int(tensors["counts"][k])) for k in range(2)
    ]
    ratio = readings.learning_ratio(rows)
    medians = tensors["eval_loss"].quantile(0.5, dim=1)
    assert ratio == pytest.approx(float(medians[1] / medians[0]))
