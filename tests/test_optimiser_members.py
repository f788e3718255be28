"""The optimiser comparison over the recorded members (experiments/optimiser_members.py), its
rows and scores (readings/optimiser_members.py) and its figure (report/teacher_plots.py)."""

import dataclasses
from types import SimpleNamespace

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch

from gated_attention import experiments as ex
from gated_attention.experiments.optimiser_members import HELD_OUT, MEMBERS
from gated_attention.readings import optimiser_members as om
from gated_attention.report.teacher_plots import plot_members_counts

matplotlib.use("Agg")  # tests only; chapters draw inline

CPU0, GPU1 = MEMBERS[0], MEMBERS[3]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_construction_step_is_the_first_step_with_the_target_split():
    steps = [0, 10, 20, 30, 40]
    counts = [[20, 12, 8, 11], [14, 9, 5, 11], [15, 10, 5, 11], [14, 10, 4, 10], [14, 10, 4, 9]]
    assert om.construction_step(steps, counts, (14, 10, 4)) == 30  # 14 = 9 + 5 is not it
    assert om.construction_step(steps[:3], counts[:3], (14, 10, 4)) is None
    assert om.construction_step(steps, counts, (20, 12, 8)) == 0


def hand_made():
    """Two members (seed0; gpu seed 1, held out), arms adamw and adam_l2, records at 0, 5, 10."""
    arms = (("adamw", "adamw", 1e-3, 0.07), ("adam_l2", "adam_l2", 1e-3, 3e-5))
    config = dataclasses.replace(
        ex.optimiser_members_config("smoke"),
        members=(CPU0, GPU1),
        held_out=(GPU1,),
        arms=arms,
        steps=10,
        counts_every=5,
    )
    counts = torch.tensor(
        [
            [[[27, 11, 16, 11]] * 3, [[27, 11, 16, 11], [14, 10, 4, 11], [14, 10, 4, 11]]],
            [[[37, 12, 25, 12]] * 3, [[37, 12, 25, 12], [20, 10, 10, 12], [13, 9, 4, 12]]],
        ]
    )
    held_out = torch.tensor(
        [
            [[1e-8, 2e-8, 1e-8], [1e-8, 4e-7, 2e-6]],
            [[3e-8, 3e-8, 3e-8], [3e-8, 6e-7, 9e-6]],
        ],
        dtype=torch.float64,
    )
    tensors = {"steps": torch.tensor([0, 5, 10]), "counts": counts, "held_out": held_out}
    return SimpleNamespace(config=config, tensors=tensors, metrics={})


def test_member_rows_on_a_hand_made_result():
    first, second = om.member_rows(hand_made())
    assert (first.label, first.held_out, second.label, second.held_out) == (
        "seed0",
        False,
        "gpu seed 1",
        True,
    )
    assert first.start == (27, 11, 16, 11) and first.end["adam_l2"] == (14, 10, 4, 11)
    assert first.start_loss == pytest.approx(1e-8) and second.start_loss == pytest.approx(3e-8)
    assert first.reach_step == 5
    assert first.cost_at_reach == pytest.approx(4e-7 / 2e-8)
    assert first.cost_end == pytest.approx(2e-6 / 1e-8)
    assert first.cost_late == pytest.approx(2e-6 / 1e-8)  # step 10 only: above 10 / 2
    assert second.reach_step is None and second.cost_at_reach is None  # 13 = 9 + 4 is not it
    assert second.cost_end == pytest.approx(9e-6 / 3e-8)
    assert second.held_out_loss == {"adamw": pytest.approx(3e-8), "adam_l2": pytest.approx(9e-6)}


def test_members_table_and_scores_on_a_hand_made_result():
    result = hand_made()
    adamw, l2 = om.arms(result.config)
    assert (adamw.label, adamw.optimiser, adamw.lr, adamw.wd) == ("adamw", "adamw", 1e-3, 0.07)
    assert adamw.decay_budget == pytest.approx(0.0007)  # 1e-3 x 0.07 x 10
    assert l2.decay_budget == pytest.approx(3e-7)
    seed0, gpu = om.table_rows(result)
    assert (seed0["member"], seed0["held out"], seed0["reach step"]) == ("seed0", "no", 5)
    assert seed0["adam_l2 end"] == (14, 10, 4, 11) and seed0["start"] == (27, 11, 16, 11)
    assert (gpu["member"], gpu["held out"], gpu["reach step"]) == ("gpu seed 1", "yes", None)
    assert gpu["adam_l2 end"] == (13, 9, 4, 12) and gpu["cost at"] is None
    assert gpu["adam_l2 held-out"] == pytest.approx(9e-6)
    scores = om.members_scores(result)
    assert scores == {
        "optim.adam_l2_reaches_construction": 1,
        "optim.adam_l2_held_out_reaches": 0,
        "optim.adam_l2_independent_reaches": 0,
        "optim.adamw_keeps_surplus": 2,
        "optim.adam_l2_loss_cost": pytest.approx((200 + 300) / 2),
    }
    fig = plot_members_counts(result)
    assert len(fig.axes) == 4 * 2 and len(fig.axes[0].lines) == 2 + 1
    plt.close(fig)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"members": ()}, "at least one"),
        ({"members": (CPU0, CPU0)}, "repeat a pair"),
        ({"members": (("teacher-identification-paper-gpu", -1),)}, "member index >= 0"),
        ({"members": (CPU0,), "held_out": (GPU1,)}, "not members"),
        ({"arms": ()}, "at least one"),
        ({"arms": (("a", "adamw", 1e-3, 0.1), ("a", "adam_l2", 1e-3, 0.0))}, "labels repeat"),
        ({"arms": (("a", "lion", 1e-3, 0.1),)}, "unknown optimiser 'lion'"),
        ({"arms": (("a", "adamw", -1e-3, 0.1),)}, "lr must be a number >= 0"),
        ({"arms": (("a", "adamw", 1e-3),)}, r"\(label, optimiser, lr, wd\)"),
        ({"steps": 0}, "steps must be a positive integer"),
    ],
)
def test_the_config_refuses_bad_input(overrides, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(ex.optimiser_members_config("smoke"), **overrides)


def test_the_paper_arms_are_fixed_as_stated():
    config = ex.experiment_config("optimiser-comparison-members", "paper")
    assert config.members == MEMBERS and config.held_out == HELD_OUT
    assert all(run == "teacher-identification-paper-gpu" for run, _ in config.held_out)
    assert config.arm("adamw") == ("adamw", 1e-3, 0.07)
    assert config.arm("adam_l2") == ("adam_l2", 1e-3, 3e-5)
    strong = config.decay_budget("adamw_strong")
    assert strong >= 5 and strong >= config.decay_budget("adam_l2")
    assert (config.steps, config.T, config.batch_size, config.counts_every) == (40_000, 8, 64, 1000)


def test_smoke_runs_through_the_cache(cache):
    config = ex.optimiser_members_config("smoke")
    first = ex.run(config, progress=False)
    again = ex.run(config, progress=False)
    assert not first.cached and again.cached and ex.config_from_dict(again.meta["config"]) == config
    t = again.tensors
    P, A, K = len(config.members), len(config.arms), config.steps // config.counts_every + 1
    assert t["steps"].tolist() == list(range(0, config.steps + 1, config.counts_every))
    assert t["counts"].shape == (P, A, K, 4) and t["held_out"].shape == (P, A, K)
    # every arm of a member starts from the same network and is measured on the same batch
    assert torch.equal(t["counts"][:, :1, 0].expand(P, A, 4), t["counts"][:, :, 0])
    assert torch.equal(t["held_out"][:, :1, 0].expand(P, A), t["held_out"][:, :, 0])
    assert bool(torch.isnan(t["train_loss"][:, :, 0]).all())
    assert again.metrics["removed_max_abs"] == [0.0] * P
    rows = om.member_rows(again)
    assert [r.held_out for r in rows] == [False, True]


def test_a_learning_rate_of_zero_keeps_the_held_out_loss():
    arms = (("still", "adam_l2", 0.0, 3e-5),)
    config = dataclasses.replace(
        ex.optimiser_members_config("smoke"), members=(CPU0,), held_out=(), arms=arms
    )
    tensors, _ = config.compute(progress=False)
    assert len(set(tensors["held_out"][0, 0].tolist())) == 1
    assert len(set(map(tuple, tensors["counts"][0, 0].tolist()))) == 1


@pytest.mark.skipif(
    "optimiser-comparison-members-paper" not in ex.recorded_names(), reason="not recorded"
)
def test_the_recorded_run_is_the_paper_profile():
    run = ex.recorded("optimiser-comparison-members-paper")
    assert run.config == ex.optimiser_members_config("paper")
    assert len(om.member_rows(run)) == 5 and "command" in run.provenance


def test_a_held_out_member_of_a_tuning_members_seed_is_a_twin_not_independent():
    # seed0 (CPU) chose the coefficient; gpu seed 0 shares its seed (teacher, start, data)
    config = ex.optimiser_members_config("paper")
    assert om.twins(config) == [MEMBERS[2], MEMBERS[3]]  # gpu seeds 0 and 1
    result = hand_made()
    assert om.twins(result.config) == []  # gpu seed 1 against seed0: seeds differ
    twin = dataclasses.replace(result.config, members=(CPU0, MEMBERS[2]), held_out=(MEMBERS[2],))
    twin_result = SimpleNamespace(config=twin, tensors=result.tensors, metrics={})
    rows = om.member_rows(twin_result)
    assert [(r.held_out, r.twin) for r in rows] == [(False, False), (True, True)]
    # gpu seed 0's adam_l2 arm at 13 = 9 + 4: not reached either way; make it reach
    twin_result.tensors["counts"][1, 1, -1] = torch.tensor([14, 10, 4, 12])
    scores = om.members_scores(twin_result)
    assert scores["optim.adam_l2_held_out_reaches"] == 1
    assert scores["optim.adam_l2_independent_reaches"] == 0  # a twin is not counted
    table = om.table_rows(twin_result)
    assert [row["held out"] for row in table] == ["no", "twin"]


def test_the_new_seed_comparison_holds_out_every_member_and_shares_no_seed():
    from gated_attention.experiments.optimiser_members import NEW_SEED_MEMBERS

    for profile in ("quick", "paper"):
        config = ex.experiment_config("optimiser-comparison-new-seeds", profile)
        assert config.members == NEW_SEED_MEMBERS and config.held_out == NEW_SEED_MEMBERS
        assert om.twins(config) == []
        base = ex.optimiser_members_config(profile)
        assert (config.arms, config.steps, config.T) == (base.arms, base.steps, base.T)
    seeds = {om.member_seed(*m) for m in NEW_SEED_MEMBERS}
    tuning = {om.member_seed(*m) for m in MEMBERS}
    assert len(seeds) == 5 and not seeds & tuning


def test_new_seed_scores_refuse_a_member_that_chose_the_values():
    result = hand_made()  # seed0 is not held out: it chose the L2 coefficient
    with pytest.raises(ValueError, match="not independent.*seed0"):
        om.new_seeds_scores(result)
    only_held = dataclasses.replace(result.config, members=(GPU1,), held_out=(GPU1,))
    one = SimpleNamespace(
        config=only_held,
        tensors={k: v[1:] if k != "steps" else v for k, v in result.tensors.items()},
        metrics={},
    )
    with pytest.raises(ValueError, match="not independent.*gpu seed 1"):
        om.new_seeds_scores(one)  # held out here, but seed 1 chose the coefficient


def test_new_seeds_scores_and_the_members_that_miss():
    from gated_attention.experiments.optimiser_members import NEW_SEED_MEMBERS

    made = hand_made()
    two = NEW_SEED_MEMBERS[:2]
    config = dataclasses.replace(made.config, members=two, held_out=two)
    result = SimpleNamespace(config=config, tensors=made.tensors, metrics={})
    scores = om.new_seeds_scores(result)
    assert scores["optim.new_seeds_adam_l2_reaches"] == 1  # the second ends at 13 = 9 + 4
    assert scores["optim.new_seeds_adamw_keeps_surplus"] == 2
    (miss,) = om.missed(result)
    assert miss.label == "cpu seed 4" and miss.start[1] == 12  # not short of lam ~ 1 neurons
    assert om.construction_target(config) == (14, 10, 4)
    starved = made.tensors["counts"].clone()
    starved[1, :, 0] = torch.tensor([30, 9, 21, 12])
    (miss,) = om.missed(SimpleNamespace(config=config, tensors={**made.tensors, "counts": starved}))
    assert miss.start[1] == 9  # fewer than the construction's 10 at lam ~ 1
    counts = made.tensors["counts"].clone()
    counts[1, 1, -1] = torch.tensor([14, 10, 4, 12])
    fixed = SimpleNamespace(config=config, tensors={**made.tensors, "counts": counts})
    assert om.missed(fixed) == []
    assert om.new_seeds_scores(fixed)["optim.new_seeds_adam_l2_reaches"] == 2


def test_cost_numbers_quote_the_ranges_and_medians_of_the_rows():
    numbers = om.cost_numbers(hand_made())
    assert (numbers["opt-start-low"], numbers["opt-start-high"]) == ("1·10⁻⁸", "3·10⁻⁸")
    assert (numbers["opt-end-low"], numbers["opt-end-high"]) == ("200", "300")
    assert numbers["opt-end-median"] == "250"
    # only seed0 reaches 14 = 10 + 4 (at step 5): one value, both ends of the range
    assert numbers["opt-reach-low"] == numbers["opt-reach-high"] == "20"
    assert numbers["opt-late-median"] == "250"


@pytest.fixture
def build(tmp_path, monkeypatch):
    from gated_attention.report import scorecard

    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path))
    monkeypatch.setattr(scorecard, "_SESSION", [])


def test_members_scores_are_scored_as_the_chapter_scores_them(build):
    from gated_attention.report import scorecard, verdict

    result = hand_made()
    c = result.config
    budget = verdict.budget("optim", steps=c.steps, T=c.T, seeds=len(c.members))
    where = dict(profile="paper", run="optimiser-comparison-members-paper", budget=budget)
    records = [
        scorecard.record(i, v, seeds=len(c.held_out if "held_out" in i else c.members), **where)
        for i, v in om.members_scores(result).items()
    ]
    by_id = {r.id: r for r in records}
    assert set(by_id) == set(om.members_scores(result))
    assert by_id["optim.adam_l2_reaches_construction"].ours == 1
    assert by_id["optim.adam_l2_held_out_reaches"].seeds == 1  # the one held-out member
    assert by_id["optim.adamw_keeps_surplus"].seeds == 2
    assert all(r.profile == "paper" for r in records)
