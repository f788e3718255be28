"""The training engine (gated_attention/training.py): fast path = reference, ensembles = separate
runs, checkpoints resume exactly, nu gets no weight decay."""

import dataclasses
import math

import pytest
import torch

from gated_attention import GatedRNN
from gated_attention import engine as tr
from gated_attention.engine import (
    TrainConfig,
    cosine_lr,
    loop,
    stack_students,
    train,
    unstack_students,
)
from gated_attention.models.compiled_loss import column_sums, loss_and_grads, scan, small_bmm
from gated_attention.models.family_registry import FAMILIES
from gated_attention.models.fast_path import (
    decay_matrix_from_nu,
    forward_packed,
    fused_loss,
    gated_rnn_fast,
    inputs_neuron_major,
    pack_params,
    targets_neuron_major,
)
from gated_attention.models.gated_rnn import (
    decay_matrix,
    gated_rnn_forward,
    lam_from_nu,
    nu_from_lam,
)
from gated_attention.tasks import TeacherStudentTask

F64 = dict(dtype="float64", log_every=5, chunk_steps=5)


def stacked(*specs, side=False, d=3, d_out=None):
    """Stacked float64 students from (n, m, seed) triples."""
    rnns = [GatedRNN(d, n, m, d_out, side=side, seed=s, dtype=torch.float64) for n, m, s in specs]
    return stack_students(rnns)


class LastStepTask:
    """A toy task with d_out != d and a loss on the last step only (like in-context regression)."""

    d, d_out, T, loss_scale = 4, 2, 6, 0.5
    loss_mask = torch.tensor([False] * 5 + [True])

    def sample(self, batch_size, generator):
        x = torch.randn(batch_size, self.T, self.d, generator=generator, dtype=torch.float64)
        y = torch.zeros(batch_size, self.T, self.d_out, dtype=torch.float64)
        y[:, -1] = x[:, :-1, :2].sum(1) * x[:, -1, 2:]
        return x, y


def test_decay_matrix_from_nu_matches_reference_values_and_gradients():
    """lam = 0, 0.3, 1, 0.9 (nu = +inf, ., -inf, .): the same matrix as the readable twin, exact
    at 0 and 1, and the same gradient wherever nu is inside the clamp."""
    lam = torch.tensor([[0.0, 0.3, 1.0, 0.9]], dtype=torch.float64)
    nu = nu_from_lam(lam).requires_grad_(True)
    L, _ = decay_matrix_from_nu(nu, 7)
    nu_ref = nu.detach().clone().requires_grad_(True)
    ref = decay_matrix(lam_from_nu(nu_ref), 7).permute(0, 3, 1, 2)  # (E, n, T, T)
    torch.testing.assert_close(L, ref, rtol=0, atol=1e-15)
    assert torch.equal(L[0, 0], torch.eye(7, dtype=torch.float64))  # lam = 0: exactly identity
    assert torch.equal(L[0, 2], torch.ones(7, 7, dtype=torch.float64).tril())  # lam = 1
    w = torch.randn(L.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    (g,) = torch.autograd.grad((L * w).sum(), nu)
    (g_ref,) = torch.autograd.grad((ref * w).sum(), nu_ref)
    assert torch.isfinite(g).all()
    torch.testing.assert_close(g, g_ref, rtol=1e-10, atol=1e-12)
    assert decay_matrix_from_nu(nu.detach(), 1)[0].shape == (1, 4, 1, 1)
    # nu = -38 is inside the clamp but lam rounds to exactly 1: the powers must be exactly 1 too
    nu38 = torch.tensor([[-38.0]], dtype=torch.float64)
    assert lam_from_nu(nu38).item() == 1.0
    L38, _ = decay_matrix_from_nu(nu38, 6)
    assert torch.equal(L38[0, 0], torch.ones(6, 6, dtype=torch.float64).tril())


@pytest.mark.parametrize("side", [False, True])
def test_fast_forward_equals_reference_outputs_and_gradients(side):
    params, _ = stacked((5, 6, 0), (5, 6, 1), side=side, d=3, d_out=2)
    x = torch.randn(2, 4, 9, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    steps = torch.tensor([2, 8])
    for out_steps in (None, steps):
        p1 = {k: v.clone().requires_grad_() for k, v in params.items()}
        p2 = {k: v.clone().requires_grad_() for k, v in params.items()}
        y1 = gated_rnn_fast(x, p1, out_steps)
        y2 = gated_rnn_forward(x, p2, mode="reference")
        if out_steps is not None:
            y2 = y2[:, :, out_steps]
        torch.testing.assert_close(y1, y2, rtol=1e-12, atol=1e-12)
        (y1**2).sum().backward()
        (y2**2).sum().backward()
        for k in params:
            torch.testing.assert_close(p1[k].grad, p2[k].grad, rtol=1e-10, atol=1e-10)


def edge_case_batch(with_steps: bool, seed: int):
    """(params, X, Y, out_steps): two float64 students (d 3, d_out 2) with lam exactly 0 and 1
    among the neurons and a nu beyond the clamp, a neuron-major batch (T 9), the loss read at
    steps 0, 4, 8 (``with_steps``) or at all."""
    params, _ = stacked((6, 5, 0), (6, 5, 1), d=3, d_out=2)
    params["nu"][0, :3] = torch.tensor([40.0, -40.0, 45.0], dtype=torch.float64)  # lam 0, 1, 0
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 4, 9, 3, generator=g, dtype=torch.float64)
    out_steps = torch.tensor([0, 4, 8]) if with_steps else None
    y = torch.randn(2, 4, 9, 2, generator=g, dtype=torch.float64)
    return params, inputs_neuron_major(x), targets_neuron_major(y, out_steps), out_steps


@pytest.mark.parametrize("with_steps", [False, True])
def test_fused_loss_equals_autograd(with_steps):
    """The hand-written backward of FusedLoss = autograd through forward_packed (float64), with
    lam exactly 0 and 1 among the neurons and a nu beyond the clamp (zero gradient there)."""
    params, X, Y, out_steps = edge_case_batch(with_steps, seed=0)
    p1 = {k: v.clone().requires_grad_() for k, v in pack_params(params).items()}
    p2 = {k: v.clone().requires_grad_() for k, v in pack_params(params).items()}
    loss1 = fused_loss(X, p1, Y, 9, out_steps, scale=0.7)
    loss2 = 0.7 * (forward_packed(X, p2, 9, out_steps) - Y).square().mean(dim=(1, 2))
    torch.testing.assert_close(loss1, loss2, rtol=1e-12, atol=0)
    w = torch.tensor([1.0, -2.5], dtype=torch.float64)  # members weighted differently
    (loss1 * w).sum().backward()
    (loss2 * w).sum().backward()
    for k in p1:
        torch.testing.assert_close(p1[k].grad, p2[k].grad, rtol=1e-10, atol=1e-12)
    assert float(p1["nu"].grad[0, 2]) == 0.0  # beyond the clamp
    assert float(p1["nu"].grad.abs().sum()) > 0


@pytest.mark.parametrize("members", [1, 2])
@pytest.mark.parametrize("with_steps", [False, True])
def test_loss_and_grads_equal_autograd(with_steps, members):
    """The compiled mode's function (scan, no autograd) = autograd through forward_packed
    (float64): the same lam 0, lam 1 and clamped nu as above, the gradients of the summed loss;
    one member (the output gating token-major) and two (neuron-major)."""
    params, X, Y, out_steps = edge_case_batch(with_steps, seed=1)
    params, X, Y = {k: v[:members] for k, v in params.items()}, X[:members], Y[:members]
    p = {k: v.clone().requires_grad_() for k, v in pack_params(params).items()}
    loss2 = 0.7 * (forward_packed(X, p, 9, out_steps) - Y).square().mean(dim=(1, 2))
    loss2.sum().backward()
    args = [p[k].detach() for k in ("W_in", "nu", "W_out", "D")]
    loss1, *grads = loss_and_grads(*args, X, Y, 9, out_steps, scale=0.7)
    torch.testing.assert_close(loss1, loss2.detach(), rtol=1e-12, atol=0)
    for k, g1 in zip(("W_in", "nu", "W_out", "D"), grads, strict=True):
        torch.testing.assert_close(g1, p[k].grad, rtol=1e-10, atol=1e-12)
    assert float(grads[1][0, 2]) == 0.0  # beyond the clamp
    assert float(grads[1].abs().sum()) > 0


def testsmall_bmm_equals_bmm_with_either_dimension_tiny():
    """``small_bmm`` (a product written as a sum for ``torch.compile``) = ``torch.bmm`` in
    float64, with the inner dimension tiny (W_in X) and with an outer one tiny (g_pq X^T)."""
    g = torch.Generator().manual_seed(3)
    a = torch.randn(2, 6, 5, generator=g, dtype=torch.float64)
    inner = torch.randn(2, 5, 40, generator=g, dtype=torch.float64)  # K = 5 <= N = 40
    torch.testing.assert_close(small_bmm(a, inner), torch.bmm(a, inner), rtol=1e-12, atol=0)
    wide = torch.randn(2, 6, 40, generator=g, dtype=torch.float64)  # K = 40 > N = 5
    X = torch.randn(2, 5, 40, generator=g, dtype=torch.float64)
    out = small_bmm(wide, X.transpose(1, 2))  # (2, 6, 5)
    assert out.shape == (2, 6, 5)
    torch.testing.assert_close(out, torch.bmm(wide, X.transpose(1, 2)), rtol=1e-12, atol=1e-14)


def testcolumn_sums_are_the_small_products_bit_for_bit():
    """``column_sums(a, b)`` (the input gating's gradient, one pass over the columns): each
    a_i b^T, bit for bit the numbers of ``small_bmm(a_i, b^T)`` it replaced, close to
    ``torch.bmm``, at rows i * K + k of its (E, len(a) * K, M) result."""
    g = torch.Generator().manual_seed(4)
    for dtype in (torch.float32, torch.float64):
        a = [torch.randn(2, 6, 300, generator=g, dtype=dtype) for _ in range(2)]
        b = torch.randn(2, 5, 300, generator=g, dtype=dtype)
        out = column_sums(a, b)
        assert out.shape == (2, 10, 6)
        tol = 1e-4 if dtype == torch.float32 else 1e-12
        for i, x in enumerate(a):
            mine = out[:, 5 * i : 5 * (i + 1)].transpose(1, 2)
            assert torch.equal(mine, small_bmm(x, b.transpose(1, 2)))
            torch.testing.assert_close(mine, torch.bmm(x, b.transpose(1, 2)), rtol=tol, atol=tol)


def test_scan_equals_the_decay_matrix():
    """``scan`` = the decay matrix's product (float64), and its reverse = the transposed one."""
    nu = torch.tensor([[40.0, -40.0, 0.3, -1.2]], dtype=torch.float64)  # lam 0, 1, and between
    u = torch.randn(1, 4, 7, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    L, e_nu = decay_matrix_from_nu(nu, 7)
    lam = torch.exp(-e_nu)
    torch.testing.assert_close(scan(u, lam), L @ u, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(scan(u, lam, True), L.transpose(-1, -2) @ u, rtol=1e-12, atol=1e-14)


def test_fast_forward_detects_a_wrong_scan():
    """The equivalence test above fails for a scan that is off by one power of lam."""
    params, _ = stacked((5, 6, 0))
    x = torch.randn(1, 2, 6, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    broken = dict(params, nu=params["nu"] + 0.01)
    y = gated_rnn_forward(x, params, mode="reference")
    assert (gated_rnn_fast(x, broken) - y).abs().max() > 1e-6


def test_stack_unstack_roundtrip():
    rnns = [GatedRNN(3, 4, 5, seed=0), GatedRNN(3, 7, 2, seed=1)]
    params, masks = stack_students(rnns)
    assert params["W_out1"].shape == (2, 5, 7) and params["D"].shape == (2, 3, 5)
    assert float(masks["W_in1"][0].sum()) == 4 * 4 and float(masks["W_in1"][1].sum()) == 7 * 4
    back = unstack_students(params, [(4, 5), (7, 2)])
    for a, b in zip(rnns, back, strict=True):
        for k, v in a.named_parameters():
            torch.testing.assert_close(getattr(b, k).float(), v, rtol=0, atol=0)
    with pytest.raises(ValueError, match="share d"):
        stack_students([GatedRNN(3, 4, 5), GatedRNN(2, 4, 5)])


def test_cosine_schedule():
    c = TrainConfig(steps=100, lr=1e-2, eta_min=1e-4)
    assert cosine_lr(0, c) == pytest.approx(1e-2)
    assert cosine_lr(50, c) == pytest.approx(0.5 * (1e-2 + 1e-4))
    assert cosine_lr(100, c) == pytest.approx(1e-4)
    w = TrainConfig(steps=100, lr=1e-2, warmup_steps=10)
    assert cosine_lr(0, w) == pytest.approx(1e-3)
    assert cosine_lr(10, w) == pytest.approx(1e-2)
    assert cosine_lr(55, w) == pytest.approx(1e-2 * 0.5 * (1 + math.cos(math.pi / 2)), abs=1e-6)


def test_config_validation():
    with pytest.raises(ValueError, match="mode"):
        TrainConfig(steps=10, mode="turbo")
    with pytest.raises(ValueError, match="dtype"):
        TrainConfig(steps=10, dtype="float16")
    with pytest.raises(ValueError, match="checkpoint_every"):
        TrainConfig(steps=10, chunk_steps=5, checkpoint_every=7)
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)


def test_train_validates_its_inputs():
    task = TeacherStudentTask.from_seed(3, seed=0, T=4)
    params, masks = stacked((4, 4, 0), (4, 4, 1))
    c = TrainConfig(steps=2, **F64)
    with pytest.raises(ValueError, match="data_seeds"):
        train([task, task], params, c, data_seeds=[0])
    with pytest.raises(ValueError, match="ensemble dim"):
        train([task], params, c, data_seeds=[0])
    with pytest.raises(TypeError, match="not a task"):
        train([object(), object()], params, c, data_seeds=[0, 1])


def test_fast_training_equals_reference_training():
    task = TeacherStudentTask.from_seed(3, seed=0, T=6)
    params, masks = stacked((6, 5, 0))
    c = TrainConfig(steps=15, lr=1e-2, weight_decay=1e-2, batch_size=8, **F64)
    fast = train([task], params, c, data_seeds=[1], masks=masks, progress=False)
    ref = train([task], params, dataclasses.replace(c, mode="reference"), data_seeds=[1])
    for k in params:
        torch.testing.assert_close(fast.params[k], ref.params[k], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(fast.losses, ref.losses, rtol=1e-10, atol=1e-10)
    assert fast.loss_steps.tolist() == [5, 10, 15] and fast.losses.shape == (3, 1)
    assert not torch.allclose(fast.params["W_out1"], params["W_out1"])  # it did train


def test_loss_mask_task_with_d_out():
    task = LastStepTask()
    params, _ = stacked((5, 4, 0), d=4, d_out=2)
    c = TrainConfig(steps=10, lr=1e-2, batch_size=8, **F64)
    fast = train([task], params, c, data_seeds=[3], progress=False)
    ref = train([task], params, dataclasses.replace(c, mode="reference"), data_seeds=[3])
    for k in params:
        torch.testing.assert_close(fast.params[k], ref.params[k], rtol=1e-10, atol=1e-10)


def test_ensemble_equals_separate_runs():
    """Members of different sizes and seeds, trained together = each trained alone (float64)."""
    t0 = TeacherStudentTask.from_seed(3, seed=0, T=5)
    t1 = TeacherStudentTask.from_seed(3, seed=1, T=5)
    specs = [(4, 3, 0), (7, 6, 1), (7, 6, 2)]
    tasks, seeds = [t0, t1, t0], [10, 11, 12]
    c = TrainConfig(steps=20, lr=1e-2, weight_decay=1e-2, batch_size=8, **F64)
    params, masks = stacked(*specs)
    # garbage in the padding: the masks must keep it out of the computation
    params = {k: torch.where(masks[k] > 0, v, torch.full_like(v, 3.0)) for k, v in params.items()}
    together = train(tasks, params, c, data_seeds=seeds, masks=masks, progress=False)
    sizes = [(n, m) for n, m, _ in specs]
    joint = unstack_students(together.params, sizes)
    for e, (n, m, s) in enumerate(specs):
        p, mk = stacked((n, m, s))
        alone = train([tasks[e]], p, c, data_seeds=[seeds[e]], masks=mk, progress=False)
        single = unstack_students(alone.params, [(n, m)])[0]
        for k, v in single.named_parameters():
            torch.testing.assert_close(getattr(joint[e], k), v, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(together.losses[:, e], alone.losses[:, 0], rtol=1e-10, atol=0)
    # masked neurons of the small member stayed exactly zero
    assert float(together.params["W_in1"][0, 4:].abs().sum()) == 0.0
    assert float(together.params["W_out1"][0, 3:].abs().sum()) == 0.0
    assert float(together.params["D"][0, :, 3:].abs().sum()) == 0.0


def fast_and_compiled(task, params, masks, steps: int, batch: int):
    """(fast, compiled): two members trained in mode "fast" and in mode "compiled" (float64),
    their weights checked equal to 1e-9."""
    c = TrainConfig(steps=steps, lr=1e-2, weight_decay=1e-2, batch_size=batch, **F64)
    kw = dict(data_seeds=[3, 4], masks=masks, progress=False)
    fast = train([task, task], params, c, **kw)
    compiled = train([task, task], params, dataclasses.replace(c, mode="compiled"), **kw)
    for k in params:
        torch.testing.assert_close(compiled.params[k], fast.params[k], rtol=1e-9, atol=1e-11)
    return fast, compiled


def test_compiled_mode_trains_as_the_fast_mode():
    """Mode "compiled" (``CompiledStep``: ``loss_and_grads`` through ``torch.compile``) ends an
    ensemble with masked members and a loss read at some steps where mode "fast" ends it
    (float64), the padding exactly zero."""
    params, masks = stacked((5, 4, 0), (3, 2, 1), d=4, d_out=2)
    fast, compiled = fast_and_compiled(LastStepTask(), params, masks, steps=12, batch=8)
    torch.testing.assert_close(compiled.losses, fast.losses, rtol=1e-9, atol=0)
    assert not torch.allclose(compiled.params["W_out1"], params["W_out1"])  # it did train
    assert float(compiled.params["W_in1"][1, 3:].abs().sum()) == 0.0  # padding stays zero


def test_compiled_mode_compiles_a_models_own_forward(monkeypatch):
    """Mode "compiled" on a path without the fused step (side gating: ``forward_packed``
    through autograd) compiles the loss and ends where mode "fast" ends (float64)."""
    compiled_fns, compile_ = [], torch.compile
    monkeypatch.setattr(
        torch, "compile", lambda f, **kw: compiled_fns.append(f) or compile_(f, **kw)
    )
    task = TeacherStudentTask.from_seed(3, seed=0, T=5)
    params, masks = stacked((5, 4, 0), (3, 4, 1), side=True)
    _, compiled = fast_and_compiled(task, params, masks, steps=10, batch=4)
    assert not torch.allclose(compiled.params["W_side"], params["W_side"])  # it did train
    assert len(compiled_fns) == 1  # the compiled run's loss, and only it, went through compile


def test_nu_gets_no_weight_decay():
    """A forward that ignores every weight: only weight decay moves them, and never nu."""
    task = TeacherStudentTask.from_seed(3, seed=0, T=4)
    params, _ = stacked((4, 4, 0))

    def ignore(x, p):  # depends on the parameters only through 0 * sum
        zero = sum((v * 0).sum() for v in p.values())
        return x[..., :3] * 0 + zero

    c = TrainConfig(steps=5, lr=0.1, weight_decay=0.5, batch_size=2, **F64)
    out = train([task], params, c, data_seeds=[0], forward=ignore, progress=False)
    torch.testing.assert_close(out.params["nu"], params["nu"], rtol=0, atol=0)
    assert float(out.params["W_in1"].abs().sum()) < 0.95 * float(params["W_in1"].abs().sum())


@pytest.mark.parametrize("mode", ["fast", "compiled"])
def test_interrupted_run_resumes_exactly(tmp_path, interrupt_at_chunk, mode):
    """Resumed from its checkpoint, a run ends bit for bit where an uninterrupted one does (in
    mode "compiled" too, whose AdamW state the compiled step keeps in the optimiser)."""
    task = TeacherStudentTask.from_seed(3, seed=0, T=5)
    params, masks = stacked((5, 4, 0), (3, 4, 1))
    c = TrainConfig(steps=30, lr=1e-2, batch_size=4, checkpoint_every=10, mode=mode, **F64)
    kw = dict(data_seeds=[1, 2], masks=masks, progress=False)
    whole = train([task, task], params, c, **kw)

    ckpt = tmp_path / "run.pt"
    interrupt_at_chunk(3, lambda: train([task, task], params, c, checkpoint=ckpt, **kw))
    assert ckpt.exists()
    resumed = train([task, task], params, c, checkpoint=ckpt, **kw)
    assert resumed.resumed_from == 10
    for k in params:
        torch.testing.assert_close(resumed.params[k], whole.params[k], rtol=0, atol=0)
    torch.testing.assert_close(resumed.losses, whole.losses, rtol=0, atol=0)


def test_float32_training_reduces_the_loss():
    task = TeacherStudentTask.from_seed(3, seed=0, T=6)
    params, masks = stack_students([GatedRNN(3, 12, 12, seed=0, lam_range=(0.5, 1.0))])
    c = TrainConfig(steps=100, lr=1e-2, batch_size=32, log_every=20, chunk_steps=50)
    out = train([task], params, c, data_seeds=[0], masks=masks, progress=False)
    assert out.params["W_in1"].dtype == torch.float32
    assert float(out.losses[-1, 0]) < 0.6 * float(out.losses[0, 0])


def test_importing_the_package_flushes_subnormals():
    """gated_attention sets flush-to-zero: a float32 subnormal times 1 is exactly 0."""
    import gated_attention  # noqa: F401  (the import is what sets it)

    assert float(torch.tensor([1e-39], dtype=torch.float32).mul(1.0)[0]) == 0.0
    assert float(torch.tensor([1e-30], dtype=torch.float32).mul(1.0)[0]) > 0.0  # normal


@pytest.mark.parametrize("task", [TeacherStudentTask.from_seed(3, seed=0, T=5), LastStepTask()])
def test_sample_chunk_neuron_major_equals_the_stacked_path(task):
    out_steps = None if task.loss_mask is None else torch.nonzero(task.loss_mask).flatten()
    gens = lambda: [torch.Generator().manual_seed(s) for s in (3, 4)]  # noqa: E731
    x, y = tr.sample_chunk([task, task], gens(), 3, 4)
    X, Y = tr.sample_chunk_neuron_major([task, task], gens(), 3, 4, torch.float32, out_steps)
    assert torch.equal(X, inputs_neuron_major(x.to(torch.float32)))
    assert torch.equal(Y, targets_neuron_major(y, out_steps).to(torch.float32))
    assert not torch.equal(X[:, 0], X[:, 1])  # two streams


def test_members_sharing_a_stream_equal_separate_runs(tmp_path, interrupt_at_chunk):
    """A paired sweep (two sizes, one task and data seed; a third member on its own stream):
    the shared stream is drawn once, and each member ends as if trained alone; a run
    interrupted and resumed from its checkpoint ends the same."""
    t0 = TeacherStudentTask.from_seed(3, seed=0, T=5)
    specs, seeds = [(4, 3, 0), (7, 6, 1), (7, 6, 2)], [10, 10, 11]
    c = TrainConfig(steps=20, lr=1e-2, weight_decay=1e-2, batch_size=8, **F64)
    params, masks = stacked(*specs)
    together = train([t0] * 3, params, c, data_seeds=seeds, masks=masks, progress=False)
    joint = unstack_students(together.params, [(n, m) for n, m, _ in specs])
    for e, (n, m, s) in enumerate(specs):
        p, mk = stacked((n, m, s))
        alone = train([t0], p, c, data_seeds=[seeds[e]], masks=mk, progress=False)
        single = unstack_students(alone.params, [(n, m)])[0]
        for k, v in single.named_parameters():
            torch.testing.assert_close(getattr(joint[e], k), v, rtol=1e-10, atol=1e-10)
    ck = tmp_path / "ck.pt"
    cc = dataclasses.replace(c, checkpoint_every=10)
    kw = dict(data_seeds=seeds, masks=masks, checkpoint=ck, progress=False)
    interrupt_at_chunk(3, lambda: train([t0] * 3, params, cc, **kw))  # 2 chunks of 5
    resumed = train([t0] * 3, params, cc, **kw)
    assert resumed.resumed_from == 10
    for k in params:
        torch.testing.assert_close(resumed.params[k], together.params[k], rtol=0, atol=0)


def test_device_is_resolved_and_checked(monkeypatch):
    monkeypatch.delenv(tr.DEVICE_ENV, raising=False)
    assert tr.resolve_device() == torch.device("cpu")
    monkeypatch.setenv(tr.DEVICE_ENV, "cpu")
    assert tr.resolve_device().type == "cpu"
    monkeypatch.setenv(tr.DEVICE_ENV, "no-such-device")
    with pytest.raises(ValueError, match="unknown device 'no-such-device'"):
        tr.resolve_device()
    with pytest.raises(ValueError, match="only 'cpu' and 'cuda'"):
        tr.resolve_device("meta")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            tr.resolve_device("cuda")
    # the env var reaches train: a bad device fails before any step, naming the variable
    task = TeacherStudentTask.from_seed(3, seed=0, T=4)
    params, _ = stacked((4, 4, 0))
    with pytest.raises(ValueError, match="GATED_ATTENTION_DEVICE"):
        train([task], params, TrainConfig(steps=2, **F64), data_seeds=[0], progress=False)


def test_drawing_in_background_threads_changes_no_number(tmp_path, monkeypatch, interrupt_at_chunk):
    """Off the CPU the data are drawn in background threads (the next chunk while the device
    trains, each stream in its own thread). Forced here on the CPU: the same numbers as drawing
    in line, also after an interruption (the checkpoint keeps the generators' states of the
    chunks trained, not of the one drawn ahead)."""
    t0 = TeacherStudentTask.from_seed(3, seed=0, T=5)
    t1 = TeacherStudentTask.from_seed(3, seed=1, T=5)
    specs, seeds = [(4, 3, 0), (7, 6, 1), (7, 6, 2)], [10, 10, 11]
    c = TrainConfig(steps=20, lr=1e-2, weight_decay=1e-2, batch_size=8, **F64)
    params, masks = stacked(*specs)
    tasks = [t0, t0, t1]
    inline = train(tasks, params, c, data_seeds=seeds, masks=masks, progress=False)
    monkeypatch.setattr(loop, "draw_in_background", lambda dev: True)
    threads = train(tasks, params, c, data_seeds=seeds, masks=masks, progress=False)
    for k in params:
        torch.testing.assert_close(threads.params[k], inline.params[k], rtol=0, atol=0)
    torch.testing.assert_close(threads.losses, inline.losses, rtol=0, atol=0)
    ck = tmp_path / "ck.pt"
    cc = dataclasses.replace(c, checkpoint_every=10)
    kw = dict(data_seeds=seeds, masks=masks, checkpoint=ck, progress=False)
    interrupt_at_chunk(4, lambda: train(tasks, params, cc, **kw))  # chunk 4 is drawn ahead
    resumed = train(tasks, params, cc, **kw)
    assert resumed.resumed_from == 10
    for k in params:
        torch.testing.assert_close(resumed.params[k], inline.params[k], rtol=0, atol=0)


def test_cuda_graph_needs_a_cuda_device():
    task = TeacherStudentTask.from_seed(3, seed=0, T=5)
    params, masks = stacked((4, 3, 0))
    c = TrainConfig(steps=5, batch_size=4, **F64)
    with pytest.raises(ValueError, match="cuda_graph=True needs a CUDA device"):
        train([task], params, c, data_seeds=[0], masks=masks, progress=False, cuda_graph=True)
    lstm = FAMILIES["lstm"]  # any model: a family's graphed step needs one too
    fam_params = lstm.init(3, 3, 4, 1, torch.Generator().manual_seed(0), torch.float64)
    with pytest.raises(ValueError, match="cuda_graph=True needs a CUDA device"):
        train([task], fam_params, c, data_seeds=[0], forward=lstm.forward, progress=False,
              cuda_graph=True)  # fmt: skip
