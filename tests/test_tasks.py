"""The teacher-student task and the task protocol (gated_attention/tasks.py)."""

import pytest
import torch

from gated_attention import random_attention
from gated_attention.constructions.gated_rnn import numerical_rank
from gated_attention.tasks import Task, TeacherStudentTask, check_task, masked_mse


def gen(seed):
    return torch.Generator().manual_seed(seed)


def test_sample_shapes_and_labels():
    task = TeacherStudentTask.from_seed(4, seed=3, T=7)
    x, y = task.sample(5, gen(0))
    assert x.shape == (5, 7, 4) and y.shape == (5, 7, 4)
    assert x.dtype == y.dtype == torch.float64
    # the labels are the teacher's output, here checked against the recurrent form of Eq. (1)
    torch.testing.assert_close(y, task.teacher.forward_recurrent(x), rtol=1e-12, atol=1e-12)
    assert task.d == task.d_out == 4 and task.T == 7 and task.loss_mask is None
    assert isinstance(task, Task)


def test_labels_in_blocks_equal_one_product_of_all_sequences_bit_for_bit(monkeypatch):
    from gated_attention.tasks import teacher_student

    for d, rank, T in ((4, None, 32), (12, 6, 32), (6, None, 12)):
        task = TeacherStudentTask.from_seed(d, seed=d, T=T, rank=rank)
        x = task.draw_inputs(3 * teacher_student.LABEL_BLOCK + 7, gen(d))  # a partial block
        W = [w.to(torch.float64) for w in (task.teacher.W_V, task.teacher.W_K, task.teacher.W_Q)]
        v, k, q = (x @ w.T for w in W)
        whole = torch.bmm(torch.bmm(q, k.transpose(1, 2)).tril_(), v)  # all N in one product
        assert torch.equal(task.labels(x), whole)
        monkeypatch.setattr(teacher_student, "LABEL_BLOCK", 5)  # blocks cut anywhere
        assert torch.equal(task.labels(x), whole)
        monkeypatch.undo()


def test_sample_is_seeded_and_fresh():
    task = TeacherStudentTask.from_seed(3, seed=0, T=5)
    x1, _ = task.sample(4, gen(1))
    x2, _ = task.sample(4, gen(1))
    torch.testing.assert_close(x1, x2, rtol=0, atol=0)
    g = gen(1)
    a, _ = task.sample(4, g)
    b, _ = task.sample(4, g)
    assert not torch.allclose(a, b)  # no repetition: every call draws new sequences
    x, _ = task.sample(20_000, gen(2))
    assert abs(float(x.mean())) < 0.01 and abs(float(x.var()) - 1.0) < 0.01  # N(0, I)


def test_teacher_seed_and_rank():
    t1 = TeacherStudentTask.from_seed(4, seed=0).teacher
    t2 = TeacherStudentTask.from_seed(4, seed=1).teacher
    assert not torch.allclose(t1.W_V, t2.W_V)
    low = TeacherStudentTask.from_seed(12, seed=0, rank=6).teacher
    assert numerical_rank(low.W_V) == 6
    assert numerical_rank(low.W_K.T @ low.W_Q) == 6


def test_bad_arguments_raise():
    with pytest.raises(TypeError, match="LinearSelfAttention"):
        TeacherStudentTask(teacher="not a layer")
    with pytest.raises(ValueError, match="T must"):
        TeacherStudentTask(random_attention(3, seed=0), T=0)
    with pytest.raises(ValueError, match="batch_size"):
        TeacherStudentTask.from_seed(3, seed=0).sample(0, gen(0))


def test_check_task_names_what_is_missing():
    class NoSample:
        d = d_out = T = 3
        loss_mask = None
        loss_scale = 1.0

    with pytest.raises(TypeError, match=r"sample\(batch_size, generator\)"):
        check_task(NoSample())

    class BadMask(NoSample):
        loss_mask = torch.ones(2, dtype=torch.bool)

        def sample(self, batch_size, generator):
            raise AssertionError

    with pytest.raises(TypeError, match="loss_mask"):
        check_task(BadMask())
    task = TeacherStudentTask.from_seed(3, seed=0)
    assert check_task(task) is task


def test_masked_mse():
    g = gen(0)
    y_hat = torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64)
    y = torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64)
    mask = torch.tensor([False, False, True, False, True])
    got = masked_mse(y_hat, y, mask, 0.5)
    for e in range(2):
        diff = (y_hat[e, :, [2, 4]] - y[e, :, [2, 4]]) ** 2
        assert abs(float(got[e]) - 0.5 * float(diff.sum()) / diff.numel()) < 1e-14
    full = masked_mse(y_hat, y)
    assert full.shape == (2,)
    torch.testing.assert_close(full, ((y_hat - y) ** 2).mean(dim=(1, 2, 3)))
    with pytest.raises(ValueError, match="shape"):
        masked_mse(y_hat, y[..., :3])
