"""Data drawn where the model trains (``train(data_on_device=...)``): which runs do, what a
checkpoint remembers, and that on the CPU it changes no number. The GPU side (data drawn there,
the same for the same seed) is in test_cuda.py."""

import pytest
import torch

from gated_attention import GatedRNN
from gated_attention import engine as tr
from gated_attention.engine.checkpoints import restore
from gated_attention.engine.data import data_on_device, data_streams
from gated_attention.tasks import TeacherStudentTask
from gated_attention.tasks.associative_recall import AssociativeRecall
from gated_attention.tasks.regression import InContextRegression

CPU = torch.device("cpu")


def test_which_runs_draw_on_their_device():
    teacher = TeacherStudentTask.from_seed(3, seed=0, T=5)
    recall = AssociativeRecall()
    assert data_on_device([teacher, InContextRegression()], CPU, None) is False  # CPU: host
    assert data_on_device([teacher], torch.device("cuda"), None) is True  # a GPU, tasks can
    assert data_on_device([teacher, recall], torch.device("cuda"), None) is True
    assert data_on_device([teacher], torch.device("cuda"), False) is False

    class HostOnly:  # a task without ``draws_on_device``
        pass

    assert data_on_device([teacher, HostOnly()], torch.device("cuda"), None) is False
    with pytest.raises(ValueError, match="HostOnly draws on the host only"):
        data_on_device([teacher, HostOnly()], CPU, True)


def test_the_recall_task_draws_on_its_generators_device():
    """App. D.3's task draws where its generator lives: on the CPU the same numbers as drawn
    there always (the recorded runs'), every tensor of the batch on that device."""
    recall = AssociativeRecall()
    batch = recall.sample_batch(6, torch.Generator(CPU).manual_seed(3))
    assert {t.device for t in (batch.x, batch.y, batch.keys, batch.values, batch.query)} == {CPU}
    x, y = recall.sample(6, torch.Generator(CPU).manual_seed(3))
    assert torch.equal(x, batch.x) and torch.equal(y, batch.y)
    assert torch.equal(batch.query_key, batch.keys.gather(1, batch.query[:, None])[:, 0])


def test_generators_live_on_the_device_asked_for():
    t = TeacherStudentTask.from_seed(3, seed=0, T=5)
    _, _, gens = data_streams([t, t], [1, 2], CPU)
    assert [g.device.type for g in gens] == ["cpu", "cpu"]
    x, y = t.sample(3, gens[0])
    assert x.device == gens[0].device and y.device == gens[0].device


def test_on_the_cpu_drawing_on_the_device_changes_no_number():
    tasks = [TeacherStudentTask.from_seed(3, seed=s, T=5) for s in (0, 1)]
    params, masks = tr.stack_students(
        [GatedRNN(3, n, n, seed=n, dtype=torch.float64) for n in (4, 6)]
    )
    c = tr.TrainConfig(steps=10, lr=1e-2, batch_size=4, dtype="float64", chunk_steps=5)
    kw = dict(data_seeds=[1, 2], masks=masks, progress=False)
    host = tr.train(tasks, params, c, data_on_device=False, **kw)
    there = tr.train(tasks, params, c, data_on_device=True, **kw)
    for k in params:
        torch.testing.assert_close(there.params[k], host.params[k], rtol=0, atol=0)


def test_a_checkpoint_drawn_on_another_device_is_refused_by_name(tmp_path):
    t = TeacherStudentTask.from_seed(3, seed=0, T=5)
    streams, _, gens = data_streams([t], [1])
    state = {"generators": [gens[0].get_state()], "data_device": "cuda"}
    with pytest.raises(ValueError, match="drew its data on cuda, this run draws on cpu"):
        restore(state, tmp_path / "ck.pt", {}, None, None, gens, streams)


def test_labels_batched_across_members_are_each_teachers_labels():
    """The GPU's way (``batch_labels``): each member draws the same inputs as alone, and one
    batched product per factor gives every member its own teacher's labels; the CPU's default
    stays member by member, and only teachers can batch."""
    from gated_attention.engine.data import _labels_batched, sample_chunk_neuron_major

    tasks = [TeacherStudentTask.from_seed(3, seed=s, T=5) for s in (0, 1, 2)]
    gens = lambda: [torch.Generator().manual_seed(s) for s in (3, 4, 5)]  # noqa: E731
    out_steps = torch.tensor([1, 4])
    alone = sample_chunk_neuron_major(tasks, gens(), 2, 4, torch.float64, out_steps)
    batched = sample_chunk_neuron_major(tasks, gens(), 2, 4, torch.float64, out_steps, None, True)
    assert torch.equal(batched[0], alone[0])  # the inputs: exactly
    torch.testing.assert_close(batched[1], alone[1], rtol=1e-12, atol=1e-12)
    assert not torch.equal(alone[1][:, 0], alone[1][:, 1])  # each member its own teacher
    x = torch.randn(3, 6, 5, 3, dtype=torch.float64)
    many = TeacherStudentTask.labels_of_many(tasks, x)
    for e, task in enumerate(tasks):
        torch.testing.assert_close(many[e], task.labels(x[e]), rtol=1e-12, atol=1e-12)
    assert not _labels_batched(tasks, CPU)
    assert _labels_batched(tasks, torch.device("cuda"))
    regression = InContextRegression()
    assert not _labels_batched([regression], torch.device("cuda"))
