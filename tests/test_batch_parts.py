"""A compiled step on a CPU over parts of its batch (gated_attention/engine/steps.py,
``batch_parts``): the same training as the batch whole, up to rounding; whole on a GPU."""

from __future__ import annotations

import pytest
import torch
from test_training import F64, LastStepTask, stacked

from gated_attention.engine import TrainConfig, steps, train
from gated_attention.engine.losses import LossSpec
from gated_attention.engine.steps import batch_parts
from gated_attention.models.fast_path import pack_params


def _packed(E: int = 2, n: int = 5, m: int = 4, d: int = 3):
    params, _ = stacked(*((n, m, s) for s in range(E)), d=d)
    return {k: v.float() for k, v in pack_params(params).items()}


def _spec(T: int) -> LossSpec:
    return LossSpec(True, None, "mse", T, None, None, 1.0)


def test_parts_halve_the_batch_until_a_part_fits_and_never_off_the_cpu(monkeypatch):
    P = _packed()  # E 2, n 5, m 4, d_out 3, d + 1 = 4: 8n + 5m + 2 d_out + d + 1 = 70
    per_sequence = 2 * 8 * 70 * 4  # E T (...) float32 bytes, T = 8
    cpu = torch.device("cpu")
    monkeypatch.setattr(steps, "PART_BYTES", per_sequence * 16)
    assert batch_parts(P, _spec(8), 16, cpu) == 1  # fits whole
    assert batch_parts(P, _spec(8), 64, cpu) == 4  # 64 -> 16 sequences a part
    assert batch_parts(P, _spec(8), 96, cpu) == 8  # 96 -> 12
    assert batch_parts(P, _spec(8), 48, cpu) == 4  # 48 -> 12: 24 does not fit
    assert batch_parts(P, _spec(8), 33, cpu) == 1  # no whole halves: whole
    assert batch_parts(P, _spec(8), 64, torch.device("cuda")) == 1  # a GPU: whole
    monkeypatch.setattr(steps, "PART_BYTES", 1)
    assert batch_parts(P, _spec(8), 64, cpu) == 8  # PART_MIN = 8 sequences a part at the least
    assert batch_parts(P, _spec(8), 8, cpu) == 1  # a batch of PART_MIN: whole
    monkeypatch.setattr(steps, "PART_MIN", 1)
    assert batch_parts(P, _spec(8), 64, cpu) == 64  # one sequence a part at the least


@pytest.mark.parametrize("member_rates", [False, True])
def test_a_batch_in_parts_trains_as_the_batch_whole(monkeypatch, member_rates):
    """Float64, a loss read at the last step only (the parts split the target columns too),
    masked members: the same losses and weights as the batch whole, to rounding."""
    params, masks = stacked((5, 4, 0), (3, 2, 1), d=4, d_out=2)
    c = TrainConfig(steps=12, lr=1e-2, weight_decay=1e-2, batch_size=8, mode="compiled", **F64)
    kw = dict(data_seeds=[3, 4], masks=masks, progress=False)
    if member_rates:
        kw["member_lrs"] = [1e-2, 3e-3]
    task = LastStepTask()
    with monkeypatch.context() as whole_batch:
        whole_batch.setattr(steps, "batch_parts", lambda *a: 1)
        whole = train([task, task], params, c, **kw)
    seen = []
    original = steps.batch_parts
    monkeypatch.setattr(steps, "batch_parts", lambda *a: seen.append(original(*a)) or seen[-1])
    monkeypatch.setattr(steps, "PART_BYTES", 1)  # every sequence its own part
    monkeypatch.setattr(steps, "PART_MIN", 1)
    parts = train([task, task], params, c, **kw)
    assert seen == [8]
    torch.testing.assert_close(parts.losses, whole.losses, rtol=1e-12, atol=0)
    for k in params:
        torch.testing.assert_close(parts.params[k], whole.params[k], rtol=1e-10, atol=1e-12)
    assert not torch.allclose(parts.params["W_out1"], params["W_out1"])  # it did train
    assert float(parts.params["W_in1"][1, 3:].abs().sum()) == 0.0  # padding stays zero


def test_another_optimiser_in_parts_gets_the_whole_batchs_gradients(monkeypatch):
    params, masks = stacked((4, 3, 0), (4, 3, 1), d=4, d_out=2)
    c = TrainConfig(steps=6, lr=1e-4, batch_size=4, mode="compiled", optimiser="sgd_l2", **F64)
    kw = dict(data_seeds=[3, 4], masks=masks, progress=False)
    task = LastStepTask()
    with monkeypatch.context() as whole_batch:
        whole_batch.setattr(steps, "batch_parts", lambda *a: 1)
        whole = train([task, task], params, c, **kw)
    monkeypatch.setattr(steps, "PART_BYTES", 1)
    monkeypatch.setattr(steps, "PART_MIN", 1)
    parts = train([task, task], params, c, **kw)
    for k in params:
        torch.testing.assert_close(parts.params[k], whole.params[k], rtol=1e-10, atol=1e-12)
    assert not torch.allclose(parts.params["D"], params["D"])  # it did train
