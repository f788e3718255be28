"""The associative recall task (gated_attention/tasks/associative_recall.py, App. D.3)."""

import pytest
import torch

from gated_attention.engine import sample_chunk
from gated_attention.tasks.associative_recall import AssociativeRecall, accuracy, query_mse
from gated_attention.tasks.protocol import Task, check_task, masked_mse


def gen(seed):
    return torch.Generator().manual_seed(seed)


def test_shapes_and_protocol():
    task = AssociativeRecall(4, 5)
    assert (task.d, task.d_out, task.T) == (9, 5, 5)
    assert isinstance(task, Task) and check_task(task) is task
    x, y = task.sample(7, gen(0))
    assert x.shape == (7, 5, 9) and y.shape == (7, 5, 5)
    assert x.dtype == y.dtype == torch.float64


@pytest.mark.parametrize("distinct", [True, False])
def test_every_key_once_one_pair_per_step_and_the_query(distinct):
    task = AssociativeRecall(4, 4, distinct_values=distinct)
    b = task.sample_batch(500, gen(1))
    K = task.n_keys
    keys, vals = b.x[:, :K, :K], b.x[:, :K, K:]
    assert torch.equal(keys.sum(dim=2), torch.ones(500, K))  # one key per pair step
    assert torch.equal(keys.sum(dim=1), torch.ones(500, K))  # every key exactly once
    assert torch.equal(vals.sum(dim=2), torch.ones(500, K))  # one value per pair step
    assert torch.equal(keys.argmax(dim=2), b.keys) and torch.equal(vals.argmax(dim=2), b.values)
    per_value = vals.sum(dim=1)
    if distinct:
        assert torch.equal(per_value, torch.ones(500, 4))  # every value exactly once
    else:
        assert bool((per_value > 1).any())  # i.i.d. values repeat in some sequences
    q = b.x[:, -1]
    assert torch.equal(q[:, K:], torch.zeros(500, 4))  # the query shows no value
    assert torch.equal(q[:, :K].argmax(dim=1), b.query_key) and torch.equal(
        q.sum(1), torch.ones(500)
    )
    for s in range(20):  # the target, recomputed by a loop over the pairs
        t = int(b.query_key[s])
        step = [i for i in range(K) if int(b.keys[s, i]) == t][0]
        assert int(b.y[s, -1].argmax()) == int(b.values[s, step]) == int(b.answer[s])
    assert torch.equal(b.y[:, :-1], torch.zeros(500, K, 4))
    assert torch.equal(b.y[:, -1].sum(dim=1), torch.ones(500))


def test_deterministic_in_the_generator_and_fresh():
    task = AssociativeRecall()
    x1, y1 = task.sample(32, gen(3))
    x2, y2 = task.sample(32, gen(3))
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    g = gen(3)
    a, _ = task.sample(32, g)
    b, _ = task.sample(32, g)
    assert not torch.equal(a, b)
    # the engine draws many steps at once and splits them: the same numbers as one call
    X, Y = sample_chunk([task], [gen(4)], steps=3, batch_size=8)
    x, y = task.sample(24, gen(4))
    assert torch.equal(X[:, 0].reshape(24, *x.shape[1:]), x)
    assert torch.equal(Y[:, 0].reshape(24, *y.shape[1:]), y)


def test_queries_and_pairings_are_uniform():
    b = AssociativeRecall(4, 4).sample_batch(40_000, gen(5))
    for counts in (torch.bincount(b.query_key, minlength=4), torch.bincount(b.answer, minlength=4)):
        assert float((counts / 40_000 - 0.25).abs().max()) < 0.015


def test_loss_mask_scores_only_the_query_step():
    task = AssociativeRecall(loss_scale=2.0)
    assert task.loss_mask.tolist() == [False] * 4 + [True]
    x, y = task.sample(16, gen(6))
    y_hat = torch.randn(y.shape, generator=gen(7), dtype=torch.float64)
    loss = masked_mse(y_hat, y, task.loss_mask, task.loss_scale)
    torch.testing.assert_close(loss, query_mse(y_hat, y, task.loss_scale))
    y_hat2 = y_hat.clone()
    y_hat2[:, :-1] += 5.0  # the pair steps do not count
    torch.testing.assert_close(masked_mse(y_hat2, y, task.loss_mask, task.loss_scale), loss)


def test_accuracy_is_argmax_at_the_query_step():
    task = AssociativeRecall()
    b = task.sample_batch(200, gen(8))
    assert float(accuracy(b.y, b.y)) == 1.0
    zeros = torch.zeros_like(b.y)  # argmax 0 everywhere: right exactly when the answer is 0
    assert float(accuracy(zeros, b.y)) == pytest.approx(float((b.answer == 0).double().mean()))
    noisy = b.y.clone()
    noisy[:, :-1] = 10.0  # earlier steps never count
    assert float(accuracy(noisy, b.y)) == 1.0


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="n_keys"):
        AssociativeRecall(1, 4)
    with pytest.raises(ValueError, match="n_values"):
        AssociativeRecall(4, True)
    with pytest.raises(ValueError, match="distinct values need n_values >= n_keys"):
        AssociativeRecall(5, 4)
    AssociativeRecall(5, 4, distinct_values=False)  # i.i.d. values: fine
    with pytest.raises(TypeError, match="distinct_values"):
        AssociativeRecall(distinct_values=1)
    with pytest.raises(ValueError, match="loss_scale"):
        AssociativeRecall(loss_scale=0.0)
    task = AssociativeRecall()
    with pytest.raises(ValueError, match="batch_size"):
        task.sample(0, gen(0))
    with pytest.raises(TypeError, match="torch.Generator"):
        task.sample(4, 0)
    with pytest.raises(ValueError, match="every key exactly once"):
        task.encode(torch.tensor([[0, 0, 1, 2]]), torch.tensor([[0, 1, 2, 3]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="shape"):
        task.encode(torch.tensor([[0, 1, 2]]), torch.tensor([[0, 1, 2]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="values must lie"):
        task.encode(torch.tensor([[0, 1, 2, 3]]), torch.tensor([[0, 1, 2, 9]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="share a shape"):
        accuracy(torch.zeros(2, 5, 4), torch.zeros(2, 5, 3))
