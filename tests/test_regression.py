"""The in-context regression task and its one-step GD solution (gated_attention.regression)."""

import math

import pytest
import torch

from gated_attention.engine import stack_students
from gated_attention.experiments import in_context_regression as icr
from gated_attention.models.fast_path import gated_rnn_fast
from gated_attention.tasks import check_task, masked_mse, regression
from gated_attention.tasks.regression import ETA_STAR, GD_MIN_LOSS, InContextRegression


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_task_follows_the_engine_protocol():
    task = check_task(InContextRegression())
    assert (task.d, task.d_out, task.T, task.observations) == (6, 3, 13, 12)
    assert task.loss_mask.tolist() == [False] * 12 + [True]
    assert task.loss_scale == 0.5


def test_sample_shapes_determinism_and_structure():
    task = InContextRegression()
    z, y, W = task.sample_with_W(500, gen(1))
    assert z.shape == (500, 13, 6) and y.shape == (500, 13, 3) and W.shape == (500, 3, 3)
    assert z.dtype == y.dtype == torch.float64
    z2, y2 = task.sample(500, gen(1))
    assert torch.equal(z, z2) and torch.equal(y, y2)
    assert not torch.equal(z, task.sample(500, gen(2))[0])
    x = z[..., :3]
    assert torch.allclose(y, torch.einsum("bki,bti->btk", W, x))  # y_t = W x_t
    assert torch.equal(z[:, :-1, 3:], y[:, :-1])  # observations show y_t
    assert torch.all(z[:, -1, 3:] == 0)  # the query shows x_q only
    assert x.abs().max() <= math.sqrt(3)


def test_sample_statistics():
    task = InContextRegression()
    z, _, W = task.sample_with_W(20_000, gen(3))
    x = z[..., :3]
    assert abs(x.var().item() - 1.0) < 0.02  # U(-sqrt 3, sqrt 3): unit variance
    assert abs((x**4).mean().item() - 9 / 5) < 0.05
    assert abs(W.var().item() - 1 / 3) < 0.01
    _, _, W_ood = task.ood().sample_with_W(20_000, gen(3))
    assert abs(W_ood.var().item() - 2 / 3) < 0.02
    assert task.ood().w_var == 2.0 and task.w_var == 1.0


def test_gd_fast_path_equals_reference_loop():
    z, _ = InContextRegression().sample(64, gen(4))
    fast = regression.gd_predict(z, 0.07, 3)
    ref = regression.gd_predict_reference(z, 0.07, 3)
    assert fast.shape == (64, 3)
    assert torch.allclose(fast, ref, atol=1e-12, rtol=0)


def test_gd_attention_and_rnn_compute_the_gd_step():
    z, _ = InContextRegression().sample(256, gen(5))
    y_gd = regression.gd_predict(z, ETA_STAR, 3)
    attention = regression.gd_attention()
    rnn = regression.gd_rnn()
    assert (rnn.n, rnn.m) == (12, 9)
    assert rnn.lam.tolist() == [1.0] * 9 + [0.0] * 3
    with torch.no_grad():
        assert (attention(z)[:, -1] - y_gd).abs().max() < 1e-12
        assert (rnn(z)[:, -1] - y_gd).abs().max() < 1e-12
        # the twin: a construction for another learning rate does not match
        assert (regression.gd_rnn(eta=0.06)(z)[:, -1] - y_gd).abs().max() > 1e-3


def test_engine_loss_of_the_constructed_rnn_is_the_gd_loss():
    task = InContextRegression()
    z, y = task.sample(2000, gen(6))
    params, _ = stack_students([regression.gd_rnn()])
    y_hat = gated_rnn_fast(z[None], params)  # (1, B, T, d_y)
    engine = masked_mse(y_hat, y[None], task.loss_mask, task.loss_scale)
    ours = task.per_sequence_loss(y_hat[0], y).mean()
    gd = regression.query_loss(regression.gd_predict(z, ETA_STAR, 3), y[:, -1]).mean()
    assert torch.allclose(engine[0], ours) and torch.allclose(ours, gd)


def test_monte_carlo_agrees_with_the_exact_loss():
    task = InContextRegression()
    etas = [ETA_STAR, 0.05]
    mean, se = regression.gd_loss_monte_carlo(task, etas, 100_000, seed=7)
    exact = [GD_MIN_LOSS, 0.5 * (1 - 2 * 0.05 * 12 + 0.05**2 * 12 * 14.8)]
    for m, s, e in zip(mean.tolist(), se.tolist(), exact, strict=True):
        assert abs(m - e) < 4 * s
        assert s < 0.01 * e  # the estimate is precise enough for the test to mean something
    # a learning rate 10% off is rejected by the same check
    assert abs(mean[0].item() - 0.5 * (1 - 2 * 0.06 * 12 + 0.06**2 * 12 * 14.8)) > 4 * se[0]


def test_paired_difference():
    a = torch.tensor([1.0, 2.0, 3.0, 4.0])
    b = torch.tensor([0.5, 1.5, 2.0, 3.5])
    mean, se = regression.paired_difference(a, b)
    assert mean == pytest.approx(0.625)
    assert se == pytest.approx(torch.tensor([0.5, 0.5, 1.0, 0.5]).std().item() / 2)
    with pytest.raises(ValueError, match="one shape"):
        regression.paired_difference(a, b[:3])


def test_bad_input_raises_clear_errors():
    task = InContextRegression()
    with pytest.raises(ValueError, match="observations must be a positive integer"):
        InContextRegression(observations=0)
    with pytest.raises(ValueError, match="w_var must be positive"):
        InContextRegression(w_var=0.0)
    with pytest.raises(TypeError, match="torch.Generator"):
        task.sample(4, 0)
    with pytest.raises(ValueError, match="batch_size"):
        task.sample(0, gen())
    with pytest.raises(ValueError, match="y_hat must have shape"):
        task.per_sequence_loss(torch.zeros(4, 12, 3), torch.zeros(4, 13, 3))
    with pytest.raises(ValueError, match="z must have shape"):
        regression.gd_predict(torch.zeros(4, 13), ETA_STAR, 3)


def test_regression_config_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown profile"):
        icr.regression_config("fast")
    with pytest.raises(ValueError, match="sizes must be positive"):
        icr.RegressionConfig(sizes=(0,))
    with pytest.raises(ValueError, match="at least one"):
        icr.RegressionConfig(seeds=())


@pytest.mark.slow
def test_compute_stores_paired_losses(tmp_path):
    from gated_attention.engine import TrainConfig

    config = icr.regression_config(
        "smoke", eval_batch=300, train=TrainConfig(steps=4, batch_size=16, chunk_steps=2)
    )
    tensors, metrics = config.compute(checkpoint=tmp_path / "checkpoint.pt", progress=False)
    E = len(config.members())
    for key in ("eval", "ood"):
        for name in ("rnn_mean", "gap", "gap_se"):
            assert tensors[f"{key}_{name}"].shape == (E,)
        assert tensors[f"{key}_rnn_table2"].shape == tensors[f"{key}_gd"].shape == (300,)
    assert tensors["params"]["W_in1"].shape == (E, max(config.sizes), 7)
    assert tensors["losses"].shape[1] == E and torch.isfinite(tensors["losses"]).all()
    # members smaller than the largest keep exact zeros outside their own block
    small = [e for e, (_, n) in enumerate(config.members()) if n < max(config.sizes)]
    n_small = min(config.sizes)
    assert torch.all(tensors["params"]["W_in1"][small, n_small:] == 0)
    # GD on the stored evaluation set, recomputed
    z, y = config.evaluation_set()
    gd = regression.query_loss(regression.gd_predict(z, ETA_STAR, 3), y[:, -1])
    assert torch.allclose(tensors["eval_gd"], gd)
    assert metrics["eval_gd_loss"] == pytest.approx(gd.mean().item())
    # the summaries are those of the per-sequence losses, recomputed from the stored networks
    rnn = config.per_sequence_losses(tensors["params"], z, y, [n for _, n in config.members()])
    assert torch.allclose(tensors["eval_rnn_mean"], rnn.mean(-1))
    for e in range(E):
        gap, se = regression.paired_difference(rnn[e], gd)
        assert tensors["eval_gap"][e].item() == pytest.approx(gap, rel=1e-9, abs=1e-15)
        assert tensors["eval_gap_se"][e].item() == pytest.approx(se, rel=1e-9)
    table2 = config.table2_members()
    assert table2 and all(config.members()[e][1] == max(config.sizes) for e in table2)
    assert len(table2) == len(config.seeds)
    assert torch.allclose(tensors["eval_rnn_table2"], rnn[table2].mean(0))
    assert not list(tmp_path.glob("checkpoint-*.pt"))  # group checkpoints are cleaned up


def test_per_sequence_losses_of_the_gd_network_are_the_gd_losses():
    config = icr.regression_config("smoke", eval_batch=500)
    params, _ = stack_students([regression.gd_rnn(), regression.gd_rnn(eta=0.05)])
    z, y = config.evaluation_set()
    losses = config.per_sequence_losses(params, z, y, chunk=128, dtype=torch.float64)
    gd = regression.query_loss(regression.gd_predict(z, ETA_STAR, 3), y[:, -1])
    assert torch.allclose(losses[0], gd, atol=1e-12)
    fast = config.per_sequence_losses(params, z, y, sizes=[12, 12])  # float32
    assert torch.allclose(fast, losses, rtol=1e-4, atol=1e-6)
    gd_05 = regression.query_loss(regression.gd_predict(z, 0.05, 3), y[:, -1])
    assert torch.allclose(losses[1], gd_05, atol=1e-12)
    assert not torch.allclose(losses[1], gd, atol=1e-3)


@pytest.mark.slow
def test_the_recorded_paper_run_is_the_paper_profile_and_fits_in_git():
    """The recorded Sec. 5.2 run: the whole paper profile, its summaries consistent with its
    metrics, small enough for git, and readable by the chapter's analysis."""
    from dev.record import LARGE_MB
    from gated_attention import experiments
    from gated_attention.readings.gd_learned import analyse_regression

    r = experiments.recorded("in-context-regression-paper-cpu")
    paper = icr.regression_config("paper")
    assert r.config == paper and int(r.tensors["loss_steps"][-1]) == paper.train.steps
    E = len(paper.members())
    for key in ("eval", "ood"):
        assert r.tensors[f"{key}_gap"].shape == r.tensors[f"{key}_rnn_mean"].shape == (E,)
        assert r.tensors[f"{key}_rnn_table2"].shape == (paper.eval_batch,)
    assert r.metrics["eval_rnn_loss"] == pytest.approx(r.tensors["eval_rnn_mean"].tolist())
    size_mb = sum(f.stat().st_size for f in r.path.iterdir()) / 1e6
    assert size_mb < LARGE_MB
    assert len(r.provenance["commit"]) == 40 and r.meta["hardware"]["device"] == "cpu"
    a = analyse_regression(r)
    assert a.n_top == 80 and len(a.top) == 4 and a.sweep == paper.sizes
    assert (r.tensors["sizes"][a.top] == 80).all()
