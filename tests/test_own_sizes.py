"""Every member at its own size (gated_attention/tools/own_sizes.py): a masked ensemble cut into
runs of one member shape each, whose FLOPs are those of each member trained alone; the floor the
GPU plan sets under its prediction."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from gated_attention.engine import stack_students
from gated_attention.experiments.registry import experiment_config
from lab import gpu_plan
from lab.device_time import flops_per_step, job_run
from lab.own_sizes import (
    PER_PARAMETER,
    member_box,
    own_size_config,
    own_size_runs,
    per_parameter,
)


def _sweep_run():
    """The size sweep of Fig. 3A (smoke) as one masked ensemble on the GPU plan."""
    config = experiment_config("how-many-neurons-A", "smoke")
    (job,) = config.jobs("cuda")
    return config, job_run(config, job)


def test_a_masked_ensemble_is_cut_into_its_members_own_sizes():
    config, run = _sweep_run()
    (job,) = config.jobs("cuda")
    members = [config.members()[e] for e in job.members]  # the run's members, in order
    sizes = list(dict.fromkeys((n, m) for _, n, m in members))
    assert len(sizes) > 1 and run["masks"] is not None
    parts = own_size_runs(run)
    assert len(parts) == len(sizes)
    for part, (n, m) in zip(parts, sizes, strict=True):
        assert part["masks"] is None
        own = [k for k, (_, n_k, m_k) in enumerate(members) if (n_k, m_k) == (n, m)]
        assert part["data_seeds"] == [run["data_seeds"][k] for k in own]
        assert part["tasks"] == [run["tasks"][k] for k in own]
        for e, k in enumerate(own):  # the member's own weights, uncut
            for name, p in config.student(*members[k]).named_parameters():
                assert torch.equal(part["params"][name][e], p.detach().to(torch.float64))


def test_the_own_size_flops_are_each_member_trained_alone():
    config, run = _sweep_run()
    cut = sum(flops_per_step(part) for part in own_size_runs(run))
    alone = 0.0
    for k, member in enumerate(config.members()):
        params, masks = stack_students([config.student(*member)])
        one = {**run, "tasks": [run["tasks"][k]], "params": params, "masks": None}
        alone += flops_per_step({**one, "data_seeds": [run["data_seeds"][k]]})
    assert cut == pytest.approx(alone, rel=1e-12)
    assert cut < flops_per_step(run)  # the padding costs FLOPs


def test_a_mask_that_is_not_one_block_cannot_be_cut():
    masks = {"W": torch.zeros(2, 3, 3)}
    masks["W"][0, :2, :2] = 1
    masks["W"][1, 0, 0] = masks["W"][1, 2, 2] = 1  # two corners: not a block
    assert member_box(masks, 0) == ((2, 2),)
    with pytest.raises(ValueError, match="not one top-left block"):
        member_box(masks, 1)
    masks["W"][1] = 0
    with pytest.raises(ValueError, match="has no parameters"):
        member_box(masks, 1)


def test_an_unmasked_run_is_its_own_size_and_groups_train_apart():
    config, run = _sweep_run()
    full = {**run, "masks": {k: torch.ones_like(v) for k, v in run["params"].items()}}
    assert (
        own_size_runs(full) == [full] and own_size_runs({**run, "masks": None})[0]["masks"] is None
    )
    arch = dataclasses.replace(
        experiment_config("architectures-teacher", "smoke"), groups_together=True
    )
    assert own_size_config(arch).groups_together is False
    assert own_size_config(config) is config


def test_the_floor_is_below_the_padded_arithmetic_and_says_if_one_part_can_hold_it(monkeypatch):
    together = dataclasses.replace(
        experiment_config("architectures-teacher", "smoke"),
        groups_together=True,
        families=("gated", "lstm"),
        lrs=(),
    )
    monkeypatch.setattr(gpu_plan, "plan_config", lambda name, profile: together)
    p = gpu_plan.plan("smoke", names=["architectures-teacher"])
    (r,) = p["runs"]
    assert 0 < r["floor_s"] < r["arithmetic_s"]  # the narrower target no longer padded
    apart = dataclasses.replace(together, groups_together=False)
    monkeypatch.setattr(gpu_plan, "plan_config", lambda name, profile: apart)
    q = gpu_plan.plan("smoke", names=["architectures-teacher"])
    assert p["floor_s"] == pytest.approx(q["arithmetic_s"]) == pytest.approx(q["floor_s"])
    assert "within it at float32" in gpu_plan.format_parts(p)
    assert "over it at float32" in gpu_plan.format_parts(p, limit_s=p["floor_s"] / 2)
    assert f"floor: {p['floor_s'] / 60:.1f} min" in gpu_plan.format_plan(p)


def test_per_parameter_counts_six_flops_a_parameter_of_each_member_and_token():
    """The estimate of any implementation's products, member by member at its own size."""
    config, run = _sweep_run()
    for part in own_size_runs(run):
        E, c, T = len(part["tasks"]), part["config"], part["tasks"][0].T
        per_member = sum(v[0].numel() for v in part["params"].values())
        assert per_parameter(part) == PER_PARAMETER * per_member * c.batch_size * T * E


def test_the_plan_sets_any_implementations_products_beside_its_floor():
    p = gpu_plan.plan("smoke", names=["how-many-neurons-A"])
    config, run = _sweep_run()
    steps = config.train.steps
    expected = sum(steps * per_parameter(part) for part in own_size_runs(run))
    assert p["per_parameter_s"] == pytest.approx(expected / p["calibration"]["peak_flops"])
    assert "6 FLOPs a parameter and token (2\nforward" in gpu_plan.format_plan(p)
    limit = p["per_parameter_s"] / 2
    assert f"(any implementation), {limit * 2 / 60:.1f} min: over it" in gpu_plan.format_parts(
        p, limit_s=limit
    )
    assert "6 FLOPs" not in gpu_plan.format_parts({**p, "per_parameter_s": None})  # a recorded
    # prediction made before the estimate
