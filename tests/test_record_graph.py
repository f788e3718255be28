"""``engine.device.record_graph``, checked on the CPU with a stand-in for CUDA's graph: each
recording on the stream it is given, one recording at a time in the process, and a failed
recording a warning and None (the caller then steps eagerly)."""

import threading
import time

import pytest
import torch

from gated_attention.engine import device


class FakeGraph:
    """torch.cuda.graph's stand-in: records the stream it got and how many recordings were
    under way at once."""

    lock = threading.Lock()
    under_way = most = 0
    streams: list = []

    def __init__(self, graph, stream=None, capture_error_mode="global", fail=False):
        self.stream, self.mode, self.fail = stream, capture_error_mode, fail

    def __enter__(self):
        with FakeGraph.lock:
            FakeGraph.under_way += 1
            FakeGraph.most = max(FakeGraph.most, FakeGraph.under_way)
            FakeGraph.streams.append((self.stream, self.mode))
        time.sleep(0.05)  # a recording takes a while: others would overlap it
        if self.fail:
            raise RuntimeError("operation not permitted when stream is capturing")
        return self

    def __exit__(self, *exc):
        with FakeGraph.lock:
            FakeGraph.under_way -= 1
        return False


@pytest.fixture
def fake_cuda(monkeypatch):
    FakeGraph.under_way = FakeGraph.most = 0
    FakeGraph.streams = []
    monkeypatch.setattr(torch.cuda, "CUDAGraph", lambda: object())
    monkeypatch.setattr(torch.cuda, "graph", FakeGraph)
    return FakeGraph


def test_recordings_in_threads_each_on_its_own_stream_one_at_a_time(fake_cuda):
    """Jobs side by side record their steps in threads of their own: never two recordings at
    once (entering one synchronises the device), each on the stream its step gave."""
    ran = []
    threads = [
        threading.Thread(target=lambda s=s: ran.append(device.record_graph(lambda: None, None, s)))
        for s in ("stream-a", "stream-b", "stream-c")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ran) == 3 and all(g is not None for g in ran)
    assert fake_cuda.most == 1
    assert sorted(fake_cuda.streams) == [
        ("stream-a", "thread_local"), ("stream-b", "thread_local"), ("stream-c", "thread_local")
    ]  # fmt: skip


def test_a_failed_recording_warns_and_returns_none_and_frees_the_lock(fake_cuda, monkeypatch):
    monkeypatch.setattr(torch.cuda, "graph", lambda *a, **k: FakeGraph(*a, **k, fail=True))
    with pytest.warns(RuntimeWarning, match="could not be recorded"):
        assert device.record_graph(lambda: None, None, "stream-a") is None
    assert not device.CAPTURE_LOCK.locked()


@pytest.mark.parametrize("mode", ["fast", "compiled"])
def test_each_step_records_on_its_own_side_stream(monkeypatch, mode):
    """The fast path's GraphedStep and mode compiled's CompiledStep hand ``record_graph`` the
    stream they warmed up on, one per step object (a recording that fails: eager steps on)."""
    from gated_attention.engine import TrainConfig, losses, steps
    from gated_attention.engine.loop import optimiser
    from gated_attention.models.fast_path import pack_params
    from lab import bench_ways

    made, got = [], []

    def stream(dev=None):
        made.append(f"side-{len(made)}")
        return made[-1]

    def record(fn, before, stream=None):
        got.append(stream)
        return None  # not recordable: the step goes on eagerly

    monkeypatch.setattr(torch.cuda, "Stream", stream)
    monkeypatch.setattr(device, "on_side_stream", lambda side, dev, fn: fn())
    monkeypatch.setattr(steps, "on_side_stream", lambda side, dev, fn: fn())
    monkeypatch.setattr(device, "record_graph", record)
    monkeypatch.setattr(steps, "record_graph", record)
    params, X, Y = bench_ways._setup(1, 4, 3, 5, 2, seed=0)
    for _ in range(2):  # two step objects: two streams
        P = {k: v.float().clone().requires_grad_(True) for k, v in pack_params(params).items()}
        opt, _ = optimiser(P, TrainConfig(steps=10, mode=mode), ("nu",))
        spec = losses.LossSpec(True, None, "mse", 5, None, None, 1.0)
        step = steps.make_step(P, None, opt, lambda: None, torch.zeros(1), spec, mode=mode,
                               capture=True)  # fmt: skip
        for _ in range(steps.GraphedStep.WARMUP + 2):
            step(X, Y)
    assert got == made == ["side-0", "side-1"]
