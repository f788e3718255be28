"""The device-time model's counts (lab/device_time.py) and the probe that
stops a run at its ``train`` call (lab/probe.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from gated_attention.engine import TrainConfig, stack_students, train
from gated_attention.models import family_registry, gru, lstm
from gated_attention.models.gated_rnn import GatedRNN
from gated_attention.tasks.teacher_student import TeacherStudentTask
from lab import device_time
from lab.bench_products import step_flops
from lab.probe import TrainCall, probing


def _run(E: int, n: int = 12, d: int = 3, T: int = 8, B: int = 16) -> dict:
    tasks = [TeacherStudentTask.from_seed(d, seed=e, T=T) for e in range(E)]
    params, masks = stack_students([GatedRNN(d, n, n, seed=e) for e in range(E)])
    config = TrainConfig(steps=1000, batch_size=B, chunk_steps=10)
    with probing(), pytest.raises(TrainCall) as stopped:
        train(tasks, params, config, data_seeds=list(range(E)), masks=masks, progress=False)
    return stopped.value.arguments


def test_probing_stops_train_before_anything_and_only_inside(tmp_path):
    tasks = [TeacherStudentTask.from_seed(3, seed=0, T=8)]
    params, _ = stack_students([GatedRNN(3, 6, 6, seed=0)])
    before = {k: v.clone() for k, v in params.items()}
    ck = tmp_path / "run.pt"
    config = TrainConfig(steps=4, batch_size=8, chunk_steps=2, checkpoint_every=2)
    with probing(), pytest.raises(TrainCall) as stopped:
        train(tasks, params, config, data_seeds=[5], checkpoint=ck, progress=False)
    args = stopped.value.arguments
    assert args["config"] is config and args["data_seeds"] == [5] and args["forward"] is None
    assert not ck.exists() and all(torch.equal(params[k], before[k]) for k in params)
    with pytest.raises(TrainCall):  # not an Exception: an experiment's `except Exception` passes it
        try:
            with probing():
                train(tasks, params, config, data_seeds=[5], progress=False)
        except Exception:  # noqa: BLE001
            pytest.fail("TrainCall was caught as an Exception")
    result = train(tasks, params, config, data_seeds=[5], progress=False)  # outside: it trains
    assert result.losses.shape[0] > 0


def test_a_fused_steps_kernels_are_flat_in_members_and_its_flops_linear():
    one, four = device_time.step_counts(_run(1)), device_time.step_counts(_run(4))
    assert one["step_kernels"] == four["step_kernels"] > 40  # 49: the fused step, its AdamW
    assert four["flops"] == pytest.approx(4 * one["flops"])
    assert four["chunk_kernels"] > one["chunk_kernels"]  # each member draws its own data
    assert one["kernels"] == pytest.approx(one["step_kernels"] + one["chunk_kernels"] / 10)
    hand = step_flops(3, 12, 12, 8, 16)["total"]  # Eq. (2)'s main products, by hand
    assert hand <= one["flops"] <= 1.1 * hand


def test_launched_counts_the_operations_that_work_not_views_or_wrappers():
    x, w = torch.ones(4, 3), torch.ones(2, 3)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        y = torch.nn.functional.linear(x, w)  # linear -> t (a view) and mm: one kernel
        y.view(-1).t().unsqueeze(0).exp()  # three views, one kernel
    assert device_time.launched(prof.events()) == 2


def _event(name, *children, shapes=None):
    e = SimpleNamespace(name=name, cpu_children=list(children), cpu_parent=None)
    e.input_shapes = shapes
    for c in children:
        c.cpu_parent = e
    return e


def test_a_multi_tensor_operation_is_one_kernel_and_an_allocation_none():
    ts = [torch.zeros(2), torch.zeros(3), torch.zeros(4)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        torch._foreach_add_(ts, 1.0)  # the CPU adds tensor by tensor; a GPU in one launch
        ts[0].new_empty_strided((2, 3), (1, 2))  # an allocation: no kernel
    assert device_time.launched(prof.events()) == 1


def test_a_number_promoted_inside_an_operation_is_no_kernel_but_the_operation_is():
    x = torch.ones(4, 3)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True
    ) as prof:
        x * 2.5  # the CPU copies 2.5 to a 0-dim float32 tensor under mul; a GPU passes it
    promoted = [e for e in prof.events() if device_time.scalar_promotion(e)]
    assert [e.cpu_parent.name for e in promoted] == ["aten::mul"]
    assert device_time.launched(prof.events()) == 1
    copy = lambda: _event("aten::_to_copy", _event("aten::copy_"))  # noqa: E731
    own = _event("aten::to", copy(), shapes=[[]])  # a 0-dim tensor moved by the code itself
    assert not device_time.scalar_promotion(own) and device_time.launched([own]) == 1
    # a product with a promoted number under it: itself and its one real copy, not the number
    bad = _event("aten::baddbmm", _event("aten::to", copy(), shapes=[[]]), copy())
    assert device_time.launched([bad]) == 2


def test_a_matrix_product_counts_itself_and_at_most_a_copy_per_operand():
    clone = lambda: _event("aten::clone", _event("aten::empty_like"), _event("aten::copy_"))  # noqa: E731
    per_batch = _event("aten::bmm", *(_event("aten::select") for _ in range(5)),
                       *(clone() for _ in range(5)))  # fmt: skip
    one_copy = _event("aten::bmm", _event("aten::resolve_conj", clone()))
    plain = _event("aten::addmm")
    events = [per_batch, one_copy, plain, *per_batch.cpu_children, _event("aten::exp")]
    assert device_time.launched(events) == 3 + 2 + 1 + 1  # the children are not top level
    assert device_time.launched([_event("aten::linear", _event("aten::t"), plain)]) == 1


def test_mode_compiled_counts_its_generated_loops_fewer_than_mode_fast():
    run = _run(2)
    fast = device_time.step_kernels(run)
    compiled = device_time.step_kernels(run, mode="compiled")
    assert 12 <= compiled["step_kernels"] < 0.6 * fast["step_kernels"]  # GEMMs, loop nests
    # each generated kernel one launch: fewer; mode fast generates none, its counts agree
    assert compiled["kernels_fused"] < compiled["kernels"]
    assert fast["kernels_fused"] == fast["kernels"]
    assert compiled["chunk_kernels"] == fast["chunk_kernels"]  # the data are drawn alike
    assert compiled["compile_s"] > 1.0 > fast["compile_s"]  # compiled from scratch: seconds


def test_a_step_costs_the_larger_of_launches_and_arithmetic():
    cal = {"t_kernel": 3e-6, "peak_flops": 1e12}
    t = device_time.step_seconds({"kernels": 100, "flops": 1e8}, cal)
    assert t["launch"] == pytest.approx(3e-4) and t["arithmetic"] == pytest.approx(1e-4)
    assert t["step"] == t["launch"]
    assert device_time.step_seconds({"kernels": 10, "flops": 1e9}, cal)["step"] == pytest.approx(
        1e-3
    )


def test_runs_of_the_same_shapes_share_a_key():
    a, b = _run(2), _run(2)
    assert device_time.run_key(a) == device_time.run_key(b)
    assert device_time.run_key(a) != device_time.run_key(_run(3))
    wider = _run(2, n=20)  # other widths: other FLOPs, the same kernels
    assert device_time.run_key(a) != device_time.run_key(wider)
    assert device_time.kernel_key(a) == device_time.kernel_key(wider)
    assert device_time.kernel_key(a) != device_time.kernel_key(_run(3))
    rated = {**a, "member_lrs": [1e-3, 1e-2]}  # each member's rate: a few kernels more
    assert device_time.kernel_key(rated) != device_time.kernel_key(a)
    assert (
        device_time.step_kernels(rated)["step_kernels"]
        > device_time.step_kernels(a)["step_kernels"]
    )


def test_two_families_forms_of_one_name_get_keys_of_their_own():
    """The LSTM's and the GRU's forms for compiled training are both named ``compiled``, and
    their parameters have the same names: each must still be counted for itself."""
    a = _run(2)
    keys = {
        device_time.kernel_key({**a, "forward": fam.compiled})
        for fam in (family_registry.family("lstm"), family_registry.family("gru"))
    }
    assert len(keys) == 2
    assert device_time.kernel_key(a) not in keys  # the fused path (forward None) apart


def test_the_calibration_shares_a_benchs_time_over_the_kernels_of_the_step_it_timed():
    bench = {"config": {"d": 4, "n": 8, "m": 8, "T": 8, "batch": 4}, "gemm_peak_gflops": 1e3}
    bench["engine_steps_per_s"] = 1e4
    counted = device_time.step_kernels(device_time.bench_run(8, 4, 8, 4))["step_kernels"]
    now = device_time.calibrate(bench)  # no count recorded: the step as the code runs it now
    assert now["kernels"] == counted and now["t_kernel"] == pytest.approx(1e-4 / counted)
    timed = device_time.calibrate({**bench, "step_kernels": 2 * counted})  # the bench's own
    assert timed["kernels"] == 2 * counted
    assert timed["t_kernel"] == pytest.approx(now["t_kernel"] / 2)
    assert timed["peak_flops"] == 1e12 and timed["peak_tf32_flops"] is None  # not measured
    assert device_time.calibrate({**bench, "gemm_peak_tf32_gflops": 4e3}) == {
        **now,
        "peak_tf32_flops": 4e12,
    }
    with pytest.raises(ValueError, match="step_kernels"):
        device_time.calibrate({**bench, "step_kernels": 0})


def _recurrence(h0: torch.Tensor, W: torch.Tensor, T: int) -> torch.Tensor:
    """h_t = tanh(W h_{t-1}) for T steps, the product as a reduction: rows independent."""
    h, hs = h0, []
    for _ in range(T):
        h = torch.tanh((h[:, None, :] * W[None]).sum(-1))
        hs.append(h)
    return torch.stack(hs, 1)


def _kernels_of_compiled(fn, *args) -> int:
    with device_time.kernel_profile() as folder:
        compiled = torch.compile(fn)
        compiled(*args)  # compiles, uncounted
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            compiled(*args)
        return device_time.launched(prof.events(), device_time.generated_nests(folder))


def test_a_recurrence_counts_a_kernel_a_step_as_a_gpu_would_run_it():
    g = torch.Generator().manual_seed(0)
    h0, W = torch.randn(8, 32, generator=g), torch.randn(32, 32, generator=g)
    T = 6
    counted = _kernels_of_compiled(lambda h, w: _recurrence(h, w, T), h0, W)
    assert counted >= T  # each step's loop a kernel (the CPU puts them all in one function)


def _cell_loop_kernels(name: str, T: int) -> int:
    """The kernels of the compiled recurrence of the LSTM or the GRU (``LSTMScan``,
    ``GRUScan``: the loop of their forms for compiled training), forward and backward, T
    steps."""
    scan, gates = {"lstm": (lstm.LSTMScan, 4), "gru": (gru.GRUScan, 3)}[name]
    E, B, N = 2, 8, 5
    g = torch.Generator().manual_seed(0)
    args = [torch.randn(E, B, T, gates * N, generator=g), torch.randn(E, gates * N, N, generator=g)]
    args += [torch.randn(E, gates * N, generator=g)] if name == "gru" else []
    args = [a.requires_grad_() for a in args]
    with device_time.kernel_profile() as folder:
        compiled = torch.compile(lambda *a: scan.apply(*a))
        compiled(*args).sum().backward()  # compiles, uncounted
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            compiled(*args).sum().backward()
        return device_time.launched(prof.events(), device_time.generated_nests(folder))


@pytest.mark.parametrize("name, per_step", [("lstm", 4), ("gru", 6)])
def test_a_compiled_cell_loop_costs_a_loop_nest_each_way_a_step_besides_its_products(
    name, per_step
):
    """A step of the LSTM's or GRU's compiled loop: one loop nest forward, one backward, and
    their products (the GRU's forward three nests, split by how they index the bias): each
    value written where it is kept (concatenated gates cost a copy of each step's: 6 and 9)."""
    assert (_cell_loop_kernels(name, 5) - _cell_loop_kernels(name, 3)) / 2 <= per_step


_SERIAL = """extern "C" void kernel(const float* in_ptr0, float* out_ptr0)
{
    torch::aot_inductor::RAIIAtenRecordFunctionHandle record_k_("k", nullptr);
    {
        for(int64_t x0=0; x0<16; x0+=1)
        {
            for(int64_t x1=0; x1<4; x1+=1) { out_ptr0[x0] += in_ptr0[x1]; }
        }
    }
    {
        { auto tmp0 = in_ptr0[0]; out_ptr0[16] = tmp0; }
    }
    {
        for(int64_t x0=0; x0<448; x0+=16) { }
    }
    {
        { auto tmp1 = in_ptr0[1]; out_ptr0[17] = tmp1; }
    }
}
"""
_PARALLEL = """extern "C" void kernel(const float* in_ptr0, float* out_ptr0)
{
    torch::aot_inductor::RAIIAtenRecordFunctionHandle record_k_("k", nullptr);
    #pragma omp parallel
    {
        int tid = omp_get_thread_num();
        {
            #pragma omp for
            for(int64_t x0=0; x0<16; x0+=1) { }
        }
        #pragma omp single
        {
            { out_ptr0[0] = 1; }
        }
        {
            #pragma omp for
            for(int64_t x0=0; x0<448; x0+=1) { }
        }
    }
}
"""


def test_a_generated_kernel_counts_its_loop_nests_and_its_scalars_as_one():
    assert device_time.loop_nests(_SERIAL) == 2 + 1  # two loop nests, the two scalars one
    assert device_time.loop_nests(_PARALLEL) == 2 + 1  # inside the OpenMP region alike
    one = _SERIAL.replace("    {\n        for(int64_t x0=0; x0<448; x0+=16) { }\n    }\n", "")
    assert device_time.loop_nests(one) == 1 + 1


def test_whole_batches_keeps_a_compiled_steps_batch_whole(monkeypatch):
    """The lab counts a GPU's kernels on the CPU: inside ``whole_batches`` the engine splits no
    batch into parts (``steps.batch_parts`` gives 1), and afterwards it splits again."""
    from gated_attention.engine import steps
    from gated_attention.engine.losses import LossSpec

    monkeypatch.setattr(steps, "PART_BYTES", 1)  # every sequence its own part
    monkeypatch.setattr(steps, "PART_MIN", 1)
    P = {"W_in": torch.zeros(1, 4, 3), "W_out": torch.zeros(1, 2, 2), "D": torch.zeros(1, 1, 1)}
    spec, cpu = LossSpec(True, None, "mse", 8, None, None, 1.0), torch.device("cpu")
    assert steps.batch_parts(P, spec, 64, cpu) == 64
    with device_time.whole_batches():
        assert steps.batch_parts(P, spec, 64, cpu) == 1
    assert steps.batch_parts(P, spec, 64, cpu) == 64
