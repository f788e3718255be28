"""The engine on a CUDA device: skipped where torch sees none (run them where it does:
``GATED_ATTENTION_DEVICE`` need not be set, the tests name the device themselves)."""

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
    gpu = tr.train(tasks, params, c, device="cuda", cuda_graph=cuda_graph, **kw)
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
    # a checkpoint written on the GPU (its optimiser state on the GPU) resumes on the CPU
    ck2 = tmp_path / "ck2.pt"
    interrupt_at_chunk(5, lambda: tr.train(tasks, params, c, checkpoint=ck2, **kw))
    there = tr.train(tasks, params, c, checkpoint=ck2, **{**kw, "device": "cpu"})
    assert there.resumed_from in (10, 20)
    for k in params:
        torch.testing.assert_close(there.params[k], whole.params[k], rtol=1e-10, atol=1e-12)
