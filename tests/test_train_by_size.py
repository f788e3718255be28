"""Size sweeps as a few ensembles of similar sizes (training.size_groups / train_by_size): the
same runs as one ensemble, a clear split rule, checkpoints per ensemble, unreadable checkpoints."""

import math

import pytest
import torch

from gated_attention import GatedRNN
from gated_attention import engine as tr
from gated_attention.engine import (
    TrainConfig,
    ensembles,
    forward_macs,
    size_groups,
    stack_students,
    train,
    train_by_size,
)
from gated_attention.tasks import TeacherStudentTask

F64 = dict(dtype="float64", log_every=5, chunk_steps=5)


def area(n, m):
    return n * m


def test_size_groups_minimises_the_padded_cost():
    # one size: one ensemble, members in order
    assert size_groups([(5, 5)] * 4, area) == [[0, 1, 2, 3]]
    # two tiny members and one large: padding the tiny ones costs 2 * 10^4, an ensemble 10
    assert size_groups([(100, 100), (2, 2), (2, 2)], area, overhead=10) == [[1, 2], [0]]
    # a large overhead keeps everything in one ensemble
    assert size_groups([(100, 100), (2, 2), (2, 2)], area, overhead=1e9) == [[0, 1, 2]]
    # no overhead: every size apart; members of one size stay together
    assert size_groups([(3, 3), (1, 1), (3, 3), (2, 2)], area, overhead=0) == [[1], [3], [0, 2]]
    # sizes 1, 2, 3 (costs 1, 4, 9), overhead 1: apart 3 + 14 = 17 beats {1, 2} {3} 2 + 8 + 9
    # = 19; overhead 5: {1, 2} {3} 10 + 8 + 9 = 27 beats apart 29, {1} {2, 3} 29 and all 32
    sizes = [(1, 1), (2, 2), (3, 3)]
    assert size_groups(sizes, area, overhead=1) == [[0], [1], [2]]
    assert size_groups(sizes, area, overhead=5) == [[0, 1], [2]]


def test_size_groups_with_overlap_pays_the_larger():
    # sizes 1, 2, 3 (costs 1, 4, 9); overhead 12 overlapping: {1, 2} {3} max(12, 8) + max(12, 9)
    # = 24 beats all max(12, 27) = 27 and apart 36; added, all 12 + 27 = 39 beats {1, 2} {3} 41
    sizes = [(1, 1), (2, 2), (3, 3)]
    assert size_groups(sizes, area, overhead=12, overlap=True) == [[0, 1], [2]]
    assert size_groups(sizes, area, overhead=12) == [[0, 1, 2]]
    # overhead 3.5 overlapping: apart 3.5 + 4 + 9 = 16.5 beats {1, 2} {3} 8 + 9 = 17; added,
    # {1, 2} {3} 7 + 17 = 24 beats apart 10.5 + 14 = 24.5
    assert size_groups(sizes, area, overhead=3.5, overlap=True) == [[0], [1], [2]]
    assert size_groups(sizes, area, overhead=3.5) == [[0, 1], [2]]


@pytest.mark.parametrize("overlap", [False, True])
def test_size_groups_chooses_the_exact_optimum(overlap):
    """Against brute force over every split of the sorted sizes into consecutive runs."""
    sizes = [(8, 8), (14, 14), (20, 20), (28, 28), (36, 36), (48, 48)] * 2
    overhead = 5e6 if overlap else 1e6  # in both, some sizes apart and some together

    def cost(n, m):
        return forward_macs(4, 4, n, m, 8, 64)

    def total(groups):
        def one(g):
            work = len(g) * cost(max(sizes[e][0] for e in g), max(sizes[e][1] for e in g))
            return max(overhead, work) if overlap else overhead + work

        return sum(one(g) for g in groups)

    classes = sorted(set(sizes))
    best = math.inf
    for mask in range(2 ** (len(classes) - 1)):  # a cut after class i where bit i is set
        runs, cur = [], [classes[0]]
        for i, c in enumerate(classes[1:]):
            if mask >> i & 1:
                runs.append(cur)
                cur = []
            cur.append(c)
        runs.append(cur)
        groups = [[e for e, s in enumerate(sizes) if s in run] for run in runs]
        best = min(best, total(groups))
    chosen = size_groups(sizes, cost, overhead=overhead, overlap=overlap)
    assert total(chosen) == pytest.approx(best, rel=1e-12)
    assert 1 < len(chosen) < len(classes)


def students_and_tasks():
    t0 = TeacherStudentTask.from_seed(3, seed=0, T=5)
    t1 = TeacherStudentTask.from_seed(3, seed=1, T=5)
    specs = [(9, 8, 0), (3, 2, 1), (9, 8, 2), (5, 5, 3)]
    students = [GatedRNN(3, n, m, seed=s, dtype=torch.float64) for n, m, s in specs]
    return [t0, t1, t0, t1], students, [10, 11, 12, 13]


def test_train_by_size_equals_one_ensemble():
    tasks, students, seeds = students_and_tasks()
    c = TrainConfig(steps=20, lr=1e-2, weight_decay=1e-2, batch_size=8, **F64)
    params, masks = stack_students(students)
    one = train(tasks, params, c, data_seeds=seeds, masks=masks, progress=False)
    split = train_by_size(tasks, students, c, data_seeds=seeds, progress=False, overhead=0.0)
    for k, v in one.params.items():
        torch.testing.assert_close(split.params[k], v, rtol=1e-10, atol=1e-10)
        assert torch.all(split.params[k][masks[k] == 0] == 0)  # padding stays zero
    torch.testing.assert_close(split.losses, one.losses, rtol=1e-10, atol=0)
    assert torch.equal(split.loss_steps, one.loss_steps)


def test_train_by_size_resumes_each_ensemble_and_cleans_up(tmp_path, interrupt_at_chunk):
    tasks, students, seeds = students_and_tasks()
    c = TrainConfig(steps=20, lr=1e-2, batch_size=4, checkpoint_every=10, **F64)
    kw = dict(data_seeds=seeds, progress=False, overhead=0.0)
    whole = train_by_size(tasks, students, c, **kw)
    ckpt = tmp_path / "checkpoint.pt"
    # 4 chunks per ensemble: stop in the middle of the second ensemble
    interrupt_at_chunk(7, lambda: train_by_size(tasks, students, c, checkpoint=ckpt, **kw))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-0.pt", "checkpoint-1.pt"]
    resumed = train_by_size(tasks, students, c, checkpoint=ckpt, **kw)
    assert resumed.resumed_from == 10 + 10  # the first ensemble's last and the second's first
    for k, v in whole.params.items():
        torch.testing.assert_close(resumed.params[k], v, rtol=0, atol=0)
    torch.testing.assert_close(resumed.losses, whole.losses, rtol=0, atol=0)
    assert list(tmp_path.iterdir()) == []  # the ensembles' checkpoints are deleted


def test_an_unreadable_checkpoint_is_discarded_with_a_warning(tmp_path):
    task = TeacherStudentTask.from_seed(3, seed=0, T=5)
    params, masks = stack_students([GatedRNN(3, 4, 4, seed=0, dtype=torch.float64)])
    c = TrainConfig(steps=10, lr=1e-2, batch_size=4, checkpoint_every=5, **F64)
    kw = dict(data_seeds=[1], masks=masks, progress=False)
    fresh = train([task], params, c, **kw)
    ckpt = tmp_path / "run.pt"
    ckpt.write_bytes(b"not a checkpoint")
    with pytest.warns(UserWarning, match=r"run\.pt is unreadable"):
        again = train([task], params, c, checkpoint=ckpt, **kw)
    assert again.resumed_from == 0
    for k, v in fresh.params.items():
        torch.testing.assert_close(again.params[k], v, rtol=0, atol=0)


def test_train_by_size_checks_its_inputs():
    tasks, students, seeds = students_and_tasks()
    c = TrainConfig(steps=2, **F64)
    with pytest.raises(ValueError, match="3 students for 4 tasks"):
        train_by_size(tasks, students[:3], c, data_seeds=seeds)
    with pytest.raises(ValueError, match="2 data_seeds for 4 tasks"):
        train_by_size(tasks, students, c, data_seeds=seeds[:2])


@pytest.mark.slow
def test_a_size_sweep_trains_as_its_config_plans(monkeypatch):
    """``TeacherStudentConfig.ensembles`` names the ensembles ``compute`` trains."""
    from gated_attention.experiments import TeacherStudentConfig

    cfg = TeacherStudentConfig(
        d=3, T=4, sizes=(2, 3, 200), seeds=(0, 1), train=TrainConfig(steps=2, log_every=1)
    )
    plan = cfg.ensembles()
    assert [sorted({cfg.members()[e][1] for e in g}) for g in plan] == [[2, 3], [200]]
    seen, real = [], tr.train

    def record(tasks, params, *args, **kw):
        seen.append(params["nu"].shape)
        return real(tasks, params, *args, **kw)

    monkeypatch.setattr(ensembles, "train", record)
    tensors, _ = cfg.compute(progress=False)
    assert seen == [(4, 3), (2, 200)]  # 4 members padded to n = 3, then 2 of n = 200
    assert tensors["params"]["nu"].shape == (6, 200)


def test_train_by_size_checks_given_groups():
    tasks, students, seeds = students_and_tasks()
    c = TrainConfig(steps=2, **F64)
    with pytest.raises(ValueError, match="groups must split the members 0..3"):
        train_by_size(tasks, students, c, data_seeds=seeds, groups=[[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="groups must split"):
        train_by_size(tasks, students, c, data_seeds=seeds, groups=[[0, 1, 2, 3], []])
