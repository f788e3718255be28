"""The engine on a CUDA device: skipped where torch sees none (run them where it does:
``GATED_ATTENTION_DEVICE`` need not be set, the tests name the device themselves)."""

import dataclasses

import pytest
import torch

from gated_attention import GatedRNN
from gated_attention import engine as tr
from gated_attention.tasks import TeacherStudentTask

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")

F64 = dict(dtype="float64", log_every=5, chunk_steps=5)


def ensemble():
    """Three float64 students of two sizes; two share a task and data stream (a paired sweep)."""
    t0 = TeacherStudentTask.from_seed(3, seed=0, T=5)
    t1 = TeacherStudentTask.from_seed(3, seed=1, T=5)
    rnns = [
        GatedRNN(3, n, m, seed=s, dtype=torch.float64)
        for n, m, s in [(4, 3, 0), (7, 6, 1), (7, 6, 2)]
    ]
    params, masks = tr.stack_students(rnns)
    return [t0, t0, t1], params, masks, [10, 10, 11]


@pytest.mark.parametrize("cuda_graph", [True, False])
def test_training_on_the_gpu_equals_the_cpu(cuda_graph):
    tasks, params, masks, seeds = ensemble()
    c = tr.TrainConfig(steps=20, lr=1e-2, weight_decay=1e-2, batch_size=8, **F64)
    kw = dict(data_seeds=seeds, masks=masks, progress=False)
    # the CPU's data on the GPU too (data_on_device=False): the same numbers to compare
    gpu = tr.train(
        tasks, params, c, device="cuda", cuda_graph=cuda_graph, data_on_device=False, **kw
    )
    cpu = tr.train(tasks, params, c, device="cpu", **kw)
    for k in params:
        torch.testing.assert_close(gpu.params[k], cpu.params[k], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(gpu.losses, cpu.losses, rtol=1e-10, atol=0)
    assert float(gpu.params["W_in1"][0, 4:].abs().sum()) == 0.0  # padding stays exactly zero


def test_a_gpu_run_resumes_from_its_checkpoint(tmp_path, interrupt_at_chunk):
    tasks, params, masks, seeds = ensemble()
    c = tr.TrainConfig(steps=30, lr=1e-2, batch_size=8, checkpoint_every=10, **F64)
    kw = dict(data_seeds=seeds, masks=masks, progress=False, device="cuda")
    whole = tr.train(tasks, params, c, **kw)
    ck = tmp_path / "ck.pt"
    interrupt_at_chunk(5, lambda: tr.train(tasks, params, c, checkpoint=ck, **kw))
    resumed = tr.train(tasks, params, c, checkpoint=ck, **kw)
    assert resumed.resumed_from in (10, 20)
    for k in params:
        torch.testing.assert_close(resumed.params[k], whole.params[k], rtol=1e-12, atol=1e-14)
    # a checkpoint written on the GPU (its optimiser state on the GPU) resumes on the CPU, when
    # its data were drawn on the host; one drawn on the GPU is refused there, by name
    host = {**kw, "data_on_device": False}
    whole_host = tr.train(tasks, params, c, **host)
    ck2 = tmp_path / "ck2.pt"
    interrupt_at_chunk(5, lambda: tr.train(tasks, params, c, checkpoint=ck2, **host))
    there = tr.train(tasks, params, c, checkpoint=ck2, **{**host, "device": "cpu"})
    assert there.resumed_from in (10, 20)
    for k in params:
        torch.testing.assert_close(there.params[k], whole_host.params[k], rtol=1e-10, atol=1e-12)
    ck3 = tmp_path / "ck3.pt"
    interrupt_at_chunk(5, lambda: tr.train(tasks, params, c, checkpoint=ck3, **kw))
    with pytest.raises(ValueError, match="drew its data on cuda"):
        tr.train(tasks, params, c, checkpoint=ck3, **{**kw, "device": "cpu"})


def test_data_drawn_on_the_gpu_are_the_same_for_the_same_seed():
    """data_on_device (the default on a GPU for these tasks): every tensor of a chunk is drawn
    on the GPU, the same seed gives the same run bit for bit, the run trains, and its data are
    not the CPU's (another generator)."""
    tasks, params, masks, seeds = ensemble()
    g = torch.Generator("cuda").manual_seed(3)
    x, y = tasks[0].sample(4, g)
    assert x.device.type == "cuda" and y.device.type == "cuda"
    c = tr.TrainConfig(steps=20, lr=1e-2, batch_size=8, **F64)
    kw = dict(data_seeds=seeds, masks=masks, progress=False, device="cuda")
    one, two = tr.train(tasks, params, c, **kw), tr.train(tasks, params, c, **kw)
    for k in params:
        torch.testing.assert_close(one.params[k], two.params[k], rtol=0, atol=0)
    assert float(one.losses[-1].mean()) < float(one.losses[0].mean())
    cpu = tr.train(tasks, params, c, **{**kw, "device": "cpu"})
    assert not torch.allclose(one.losses, cpu.losses)


def test_the_compiled_mode_on_the_gpu_trains_as_the_fast_mode():
    """Mode "compiled" on the GPU (Triton kernels) ends where mode "fast" ends (float64)."""
    tasks, params, masks, seeds = ensemble()
    c = tr.TrainConfig(steps=12, lr=1e-2, weight_decay=1e-2, batch_size=8, **F64)
    kw = dict(data_seeds=seeds, masks=masks, progress=False, device="cuda")
    fast = tr.train(tasks, params, c, **kw)
    compiled = tr.train(tasks, params, dataclasses.replace(c, mode="compiled"), **kw)
    for k in params:
        torch.testing.assert_close(compiled.params[k], fast.params[k], rtol=1e-9, atol=1e-11)


def test_the_compiled_step_as_one_graph_replays_the_eager_compiled_step():
    """Mode "compiled" with the whole step recorded as one CUDA graph (weights, AdamW's state
    and step counters, the window, the projection; the schedule's lr written before each
    replay) ends exactly where the same compiled step run without the graph ends."""
    tasks, params, masks, seeds = ensemble()
    c = tr.TrainConfig(steps=20, lr=1e-2, weight_decay=1e-2, batch_size=8, mode="compiled", **F64)
    kw = dict(data_seeds=seeds, masks=masks, progress=False, device="cuda")
    graphed = tr.train(tasks, params, c, cuda_graph=True, **kw)
    eager = tr.train(tasks, params, c, cuda_graph=False, **kw)
    for k in params:
        torch.testing.assert_close(graphed.params[k], eager.params[k], rtol=0, atol=0)
    torch.testing.assert_close(graphed.losses, eager.losses, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["lstm", "lru_inout", "mamba"])
def test_a_familys_graphed_step_replays_its_eager_step(name):
    """Another family through its forward: the loss and backward recorded as one CUDA graph
    (``make_step`` on a GPU) end where the same steps run eagerly end, with no warning that
    the recording failed."""
    import warnings

    from gated_attention.models.family_registry import FAMILIES

    fam = FAMILIES[name]
    task = TeacherStudentTask.from_seed(3, seed=0, T=5)
    params = fam.init(3, 3, 6, 2, torch.Generator().manual_seed(0), torch.float64)
    c = tr.TrainConfig(steps=20, lr=1e-2, batch_size=8, **F64)
    kw = dict(data_seeds=[0, 1], forward=fam.forward, no_decay=fam.no_decay, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        graphed = tr.train([task] * 2, params, c, device="cuda", cuda_graph=True, **kw)
    eager = tr.train([task] * 2, params, c, device="cuda", cuda_graph=False, **kw)
    for k in params:
        torch.testing.assert_close(graphed.params[k], eager.params[k], rtol=1e-12, atol=1e-14)


@pytest.mark.xfail(
    strict=True,
    reason="failed on an H200 with torch 2.11 (2026-12-04): the captures of jobs at once failed "
    "and a job diverged; since then each recording has its own stream (record_graph); when "
    "this passes, set side_by_side.STREAMS_CHECKED",
)
def test_jobs_side_by_side_on_streams_give_the_numbers_of_each_job_alone(monkeypatch):
    """Three jobs of a smoke run at once, each in a thread on its own CUDA stream (graphs
    captured in thread-local mode), against each job alone on the same GPU."""
    from torch.utils._pytree import tree_flatten_with_path

    from gated_attention.experiments import protocol, side_by_side

    monkeypatch.setattr(side_by_side, "STREAMS_CHECKED", True)  # the streams, not the guard
    from gated_attention.experiments.registry import experiment_config

    monkeypatch.setenv("GATED_ATTENTION_DEVICE", "cuda")
    config = experiment_config("optimiser-comparison", "smoke")
    jobs = config.jobs("cuda")
    alone, _ = config.assemble(jobs, [config.train_job(j, progress=False) for j in jobs])
    together, _ = protocol.compute(config, progress=False, device="cuda", jobs_at_once=3)
    a, b = tree_flatten_with_path(alone)[0], tree_flatten_with_path(together)[0]
    assert len(a) == len(b)
    for (where, x), (_, y) in zip(a, b, strict=True):
        torch.testing.assert_close(y, x, rtol=0, atol=0, equal_nan=True, msg=str(where))


def test_the_recall_task_draws_on_the_gpu_the_same_for_the_same_seed():
    from gated_attention.tasks.associative_recall import AssociativeRecall

    recall = AssociativeRecall()
    a = recall.sample_batch(16, torch.Generator("cuda").manual_seed(3))
    b = recall.sample_batch(16, torch.Generator("cuda").manual_seed(3))
    assert all(t.device.type == "cuda" for t in (a.x, a.y, a.keys, a.values, a.query))
    assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)


@pytest.mark.parametrize("mode", ["fast", "compiled"])
def test_members_at_their_own_rates_on_the_gpu_equal_the_cpu(mode):
    tasks, params, masks, seeds = ensemble()
    c = tr.TrainConfig(steps=20, lr=1e-2, eta_min=1e-3, batch_size=8, mode=mode, **F64)
    kw = dict(data_seeds=seeds, masks=masks, progress=False, member_lrs=[3e-3, 1e-2, 3e-2])
    gpu = tr.train(tasks, params, c, device="cuda", data_on_device=False, **kw)
    cpu = tr.train(tasks, params, c, device="cpu", **kw)
    for k in params:
        torch.testing.assert_close(gpu.params[k], cpu.params[k], rtol=1e-10, atol=1e-12)


def test_a_padded_family_ensemble_on_the_gpu_equals_the_cpu():
    from gated_attention.models.family_registry import family
    from gated_attention.models.padding import pad_members

    g = torch.Generator().manual_seed(0)
    groups = [family("lru_inout").init(3, 3, w, 2, g, torch.float64) for w in (3, 5)]
    params, _ = pad_members(groups, [3, 5])
    task = TeacherStudentTask.from_seed(3, seed=0, T=5)
    c = tr.TrainConfig(steps=10, lr=1e-2, batch_size=8, **F64)
    kw = dict(data_seeds=[1, 2, 1, 2], forward=family("lru_inout").forward, progress=False)
    gpu = tr.train([task] * 4, params, c, device="cuda", data_on_device=False, **kw)
    cpu = tr.train([task] * 4, params, c, device="cpu", **kw)
    for k in params:
        torch.testing.assert_close(gpu.params[k], cpu.params[k], rtol=1e-10, atol=1e-12)
    assert float(gpu.params["l1_B_re"][:2, 3:].abs().sum()) == 0.0  # the padding stays zero


def test_the_tf32_peak_is_measured_with_the_mode_on_and_leaves_it_off():
    from lab.bench_products import gemm_peak_gflops

    assert torch.backends.cuda.matmul.allow_tf32 is False  # the engine trains in float32
    peak = gemm_peak_gflops(1024, repeats=3, device="cuda", tf32=True)
    assert peak > 0 and torch.backends.cuda.matmul.allow_tf32 is False
