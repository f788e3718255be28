"""readings.provenance: a recorded run as a row, and whether it is the paper profile."""

from __future__ import annotations

from types import SimpleNamespace

from gated_attention.readings.provenance import Recorded, recorded


def test_a_recorded_run_says_whether_it_is_the_paper_profile():
    config = SimpleNamespace(seeds=(0, 1, 2), train=SimpleNamespace(steps=40_000))
    meta = {"hardware": {"cpu": "some CPU"}, "wall_time_s": 600.0}
    run = SimpleNamespace(config=config, meta=meta, provenance={"commit": "abcdef0123"})
    other = SimpleNamespace(seeds=(0,), train=SimpleNamespace(steps=1))
    assert recorded("x", run, config) == Recorded("x", "yes", 3, 40_000, "some CPU", 10, "abcdef0")
    assert recorded("x", run, other).paper_profile == "no"
    assert recorded("x", run).paper_profile == "-"
    gpu = {**meta, "hardware": {"cpu": "some CPU", "device_name": "H200"}}
    assert recorded("x", SimpleNamespace(config=config, meta=gpu, provenance={})).device == "H200"
