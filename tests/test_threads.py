"""Training on the CPU runs on ``engine.device.train_threads()`` torch threads (one by default,
$GATED_ATTENTION_THREADS to change it), and gives the caller's count back after."""

import contextlib

import pytest
import torch

from gated_attention import workbench
from gated_attention.engine import device


def _threads_while_training(monkeypatch, env: str | None) -> tuple[list[int], int]:
    if env is None:
        monkeypatch.delenv(device.THREADS_ENV, raising=False)
    else:
        monkeypatch.setenv(device.THREADS_ENV, env)
    seen: list[int] = []
    real = device.training_threads

    @contextlib.contextmanager
    def spy(dev):  # the count inside the context ``train`` runs in
        with real(dev):
            seen.append(torch.get_num_threads())
            yield

    monkeypatch.setattr("gated_attention.engine.loop.training_threads", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        task = workbench.teacher_task(d=4, seed=0)
        workbench.fit(workbench.student(task, n=8, seed=0), task, steps=4, progress=False)
        return seen, torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def test_training_runs_on_one_thread_by_default_and_restores_the_callers(monkeypatch):
    seen, after = _threads_while_training(monkeypatch, None)
    assert seen == [device.DEFAULT_THREADS] == [1] and after == 2


def test_the_environment_sets_the_threads(monkeypatch):
    seen, _ = _threads_while_training(monkeypatch, "2")
    assert seen == [2]


def test_the_callers_threads_come_back():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with device.training_threads(torch.device("cpu")):
            assert torch.get_num_threads() == device.train_threads()
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("text", ["0", "-1", "two"])
def test_a_bad_count_is_refused_by_name(monkeypatch, text):
    monkeypatch.setenv(device.THREADS_ENV, text)
    with pytest.raises(ValueError, match="GATED_ATTENTION_THREADS must be a positive integer"):
        device.train_threads()
