"""Each member at its own learning rate (``engine.member_rates``): an ensemble trained with
``member_lrs`` equals each member trained alone at its rate, whatever the optimiser, path,
schedule or resume."""

import dataclasses

import pytest
import torch

from gated_attention import GatedRNN
from gated_attention.engine import TrainConfig, stack_students, train
from gated_attention.models.family_registry import family
from gated_attention.tasks import TeacherStudentTask

RATES = (3e-3, 2e-2)
TASK = TeacherStudentTask.from_seed(3, seed=0, T=6)
C = TrainConfig(
    steps=12, lr=1e-2, eta_min=1e-3, warmup_steps=3, weight_decay=1e-2, batch_size=8,
    dtype="float64", log_every=4, chunk_steps=4,
)  # fmt: skip


def _students():
    return stack_students([GatedRNN(3, 5, 5, seed=s, dtype=torch.float64) for s in (0, 1)])


def _together_and_alone(config, params, masks=None, forward=None, **kw):
    run = dict(data_seeds=[5, 6], masks=masks, forward=forward, progress=False)
    together = train([TASK, TASK], params, config, member_lrs=RATES, **run, **kw)
    alone = []
    for e, lr in enumerate(RATES):
        one = {k: v[e : e + 1] for k, v in params.items()}
        mask = None if masks is None else {k: v[e : e + 1] for k, v in masks.items()}
        c = dataclasses.replace(config, lr=lr)
        alone.append(train([TASK], one, c, data_seeds=[5 + e], masks=mask, forward=forward,
                           progress=False))  # fmt: skip
    return together, alone


def _assert_each_as_alone(together, alone):
    for e, a in enumerate(alone):
        for k, v in a.params.items():
            torch.testing.assert_close(together.params[k][e : e + 1], v, rtol=0, atol=1e-11)
        torch.testing.assert_close(together.losses[:, e : e + 1], a.losses, rtol=1e-10, atol=0)


@pytest.mark.parametrize("optimiser", ["adamw", "adam_l2", "sgd_l2"])
def test_each_member_trains_as_alone_at_its_rate(optimiser):
    params, masks = _students()
    together, alone = _together_and_alone(dataclasses.replace(C, optimiser=optimiser), params)
    _assert_each_as_alone(together, alone)
    assert not torch.allclose(alone[0].params["W_out1"], alone[1].params["W_out1"], atol=1e-6)


def test_a_family_forward_and_the_compiled_mode_too():
    g = torch.Generator().manual_seed(0)
    params = family("lstm").init(3, 3, 4, 2, g, torch.float64)
    together, alone = _together_and_alone(C, params, forward=family("lstm").forward)
    _assert_each_as_alone(together, alone)
    params, _ = _students()
    together, alone = _together_and_alone(dataclasses.replace(C, mode="compiled"), params)
    _assert_each_as_alone(together, alone)


def test_a_resumed_run_keeps_each_members_rate(tmp_path):
    params, _ = _students()
    c = dataclasses.replace(C, checkpoint_every=4)
    whole = train([TASK, TASK], params, c, data_seeds=[5, 6], member_lrs=RATES, progress=False)
    ck = tmp_path / "run.pt"
    with pytest.raises(KeyboardInterrupt):  # stopped at step 8's log: step 4's checkpoint
        train([TASK, TASK], params, c, data_seeds=[5, 6], member_lrs=RATES, checkpoint=ck,
              progress=False, on_log=_stop_at(8))  # fmt: skip
    again = train([TASK, TASK], params, c, data_seeds=[5, 6], member_lrs=RATES, checkpoint=ck,
                  progress=False)  # fmt: skip
    assert again.resumed_from == 4
    for k in whole.params:
        torch.testing.assert_close(again.params[k], whole.params[k], rtol=0, atol=1e-13)


def _stop_at(step):
    def on_log(s, _params):
        if s == step:
            raise KeyboardInterrupt

    return on_log


def test_bad_member_lrs_are_named():
    params, _ = _students()
    with pytest.raises(ValueError, match="1 member_lrs for an ensemble of 2"):
        train([TASK, TASK], params, C, data_seeds=[5, 6], member_lrs=[1e-2])
    with pytest.raises(ValueError, match="positive finite"):
        train([TASK, TASK], params, C, data_seeds=[5, 6], member_lrs=[1e-2, float("nan")])
    with pytest.raises(ValueError, match="must be positive"):
        train([TASK, TASK], params, dataclasses.replace(C, lr=0.0), data_seeds=[5, 6],
              member_lrs=RATES)  # fmt: skip
