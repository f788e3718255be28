"""Jobs side by side (gated_attention/experiments/side_by_side.py, the runner's ``Streams``
executor): several of an experiment's jobs at once, each in its own thread (on a GPU, on its
own CUDA stream), with the numbers of the jobs run one after another."""

from __future__ import annotations

import functools
import threading
import time

import pytest
import torch
from torch.utils._pytree import tree_flatten_with_path

from gated_attention.experiments import runner
from gated_attention.experiments.registry import experiment_config
from gated_attention.experiments.side_by_side import (
    SIDE_BY_SIDE_ENV,
    run_side_by_side,
    side_by_side,
)


def test_calls_run_at_once_in_threads_and_come_back_in_order():
    seen, gate = set(), threading.Barrier(3, timeout=10)

    def call(k):
        gate.wait()  # all three must be running at once to pass
        seen.add(threading.current_thread().name)
        return k * k

    calls = [functools.partial(call, k) for k in range(3)]
    assert run_side_by_side(calls, 3, "cpu", threads=True) == [0, 1, 4]
    assert len(seen) == 3 and threading.current_thread().name not in seen
    order = []
    plain = [functools.partial(order.append, k) for k in range(3)]
    run_side_by_side(plain, 3, "cpu")  # a CPU: one after another, in this thread
    assert order == [0, 1, 2]


def test_an_error_waits_for_the_others_and_names_the_first():
    finished = []

    def slow():
        time.sleep(0.2)
        finished.append("slow")
        return 1

    def bad():
        raise ValueError("job 1 broke")

    with pytest.raises(ValueError, match="job 1 broke"):
        run_side_by_side([slow, bad, slow], 3, "cpu", threads=True)
    assert finished == ["slow", "slow"]  # what finished was kept


def test_the_number_at_once_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(SIDE_BY_SIDE_ENV, raising=False)
    assert side_by_side() == 1
    monkeypatch.setenv(SIDE_BY_SIDE_ENV, "8")
    assert side_by_side() == 8
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(SIDE_BY_SIDE_ENV, bad)
        with pytest.raises(ValueError, match=SIDE_BY_SIDE_ENV):
            side_by_side()


def test_an_experiments_jobs_side_by_side_give_its_numbers(tmp_path):
    """Three jobs of a smoke run, in three threads at once, against one after another: the
    same tensors, bit for bit (each job draws from its own generators)."""
    config = experiment_config("optimiser-comparison", "smoke")
    jobs = config.jobs("cpu")
    assert len(jobs) == 3
    outputs = [config.train_job(job, checkpoint=None, progress=False) for job in jobs]
    alone, _ = config.assemble(jobs, outputs)  # each job alone, in this thread
    threaded = runner.Streams(3, "cpu", threads=True)  # the runner's executor, in threads
    together, _ = runner.compute(
        config, checkpoint=tmp_path / "checkpoint.pt", progress=False, executor=threaded
    )
    a, spec = tree_flatten_with_path(alone)
    b, spec_b = tree_flatten_with_path(together)
    assert spec == spec_b and sum(torch.is_tensor(x) for _, x in a) >= 6
    for (where, x), (_, y) in zip(a, b, strict=True):  # bit for bit, NaN where NaN
        torch.testing.assert_close(y, x, rtol=0, atol=0, equal_nan=True, msg=str(where))
    assert not list(tmp_path.iterdir())  # every job's files cleaned up after assembling


def test_on_cuda_jobs_run_one_after_another_until_the_streams_pass_their_check():
    """STREAMS_CHECKED is off (the check failed on an H200): n jobs at once on CUDA warn and
    run in this thread, in order (no stream is made, so this runs without a GPU too)."""
    order = []
    calls = [functools.partial(lambda k: order.append(k) or k, k) for k in range(3)]
    with pytest.warns(RuntimeWarning, match="one after another"):
        assert run_side_by_side(calls, 3, "cuda") == [0, 1, 2]
    assert order == [0, 1, 2]
