"""The CPU budget (``experiments.cpu_budget``): the quick configs with only their budget changed."""

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from dev import record as rec
from gated_attention import experiments as ex
from gated_attention.experiments import cpu_budget as cb
from gated_attention.experiments.registry import EXPERIMENTS, experiment_config

#: what a CPU-budget config may change against its quick config
BUDGET_FIELDS = {"T", "seeds", "sizes", "train", "lrs"}
#: what it may change in the training config
BUDGET_TRAIN = {"steps", "warmup_steps", "log_every", "chunk_steps", "checkpoint_every"}


def stand_in(config):
    """An lr-search entry whose largest rate wins for every family."""
    loss = -torch.tensor([lr for _, _, lr in config.groups()], dtype=torch.float64)[:, None]
    return SimpleNamespace(tensors={"eval_loss": loss.expand(-1, len(config.seeds))})


def cpu(name):
    return cb.cpu_config(name, resolve=stand_in)


def quick(name):
    if name in ("architectures-teacher", "architectures-regression"):
        return experiment_config(name, "quick", resolve=stand_in)
    return experiment_config(name, "quick")


def changed(a, b) -> set[str]:
    return {f.name for f in dataclasses.fields(a) if getattr(a, f.name) != getattr(b, f.name)}


#: the CPU budget of App. D.3 is its paper profile (it fits a sitting)
PAPER_PROFILE = {"associative-recall"}


@pytest.mark.parametrize("name", sorted(set(cb.CPU_RUNS) - PAPER_PROFILE))
def test_a_cpu_run_is_the_quick_config_with_a_larger_budget(name):
    assert name in EXPERIMENTS
    c, q = cpu(name), quick(name)
    assert type(c) is type(q)
    assert changed(c, q) <= BUDGET_FIELDS
    assert changed(c.train, q.train) <= BUDGET_TRAIN
    assert c.train.steps > q.train.steps
    if name.endswith("-lr"):  # the search: one held-out seed (below)
        assert c.seeds == (cb.HELD_OUT,)
    else:
        assert len(c.seeds) >= len(q.seeds)
    assert ex.entry_path(c) != ex.entry_path(q)  # its own entry in the cache


@pytest.mark.parametrize("name", sorted(PAPER_PROFILE))
def test_a_run_that_fits_a_sitting_is_its_paper_profile(name):
    assert cpu(name) == experiment_config(name, "paper")


def test_fig2_ladder_of_budgets():
    quick_ti = quick("teacher-identification")
    rungs = [cb.cpu_config("teacher-identification", b) for b in ("cpu-x2", "cpu-x4", "cpu")]
    assert [c.train.steps for c in rungs] == [k * quick_ti.train.steps for k in cb.LADDER]
    for c in rungs:  # a complete run of its own at each rung: the quick config otherwise
        assert changed(c, quick_ti) == {"train"}
        assert changed(c.train, quick_ti.train) <= {"steps", "checkpoint_every"}
    assert len({ex.entry_path(c) for c in rungs}) == 3
    with pytest.raises(ValueError, match="rung of Fig. 2's ladder only"):
        cb.cpu_config("how-many-neurons-A", "cpu-x2")
    with pytest.raises(ValueError, match="unknown budget 'cpu-x3'"):
        cb.cpu_config("teacher-identification", "cpu-x3")


def test_the_issue_s_minimum_budgets():
    for panel in "AB":
        c = cpu(f"how-many-neurons-{panel}")
        assert c.T == 32 and len(c.seeds) >= 5
        twice = 2 * ex.PANELS[panel]["construction"]
        assert min(c.sizes) < twice < max(c.sizes)
    for task in ("teacher", "regression"):
        c, q = cpu(f"architectures-{task}"), quick(f"architectures-{task}")
        assert c.train.steps >= 10 * q.train.steps and len(c.seeds) >= 3
        assert c.train.warmup_steps > 0
        assert c.families == q.families and c.targets == q.targets
    assert cpu("architectures-teacher").T == 32


@pytest.mark.parametrize("task", ["teacher", "regression"])
def test_rates_are_searched_on_a_held_out_seed(task):
    search, main = cpu(f"architectures-{task}-lr"), cpu(f"architectures-{task}")
    assert search.seeds == (cb.HELD_OUT,) and cb.HELD_OUT not in main.seeds
    assert search.T == main.T and search.train.warmup_steps > 0
    # the main run takes each family's rate from its search (here: the largest of the grid)
    assert dict(main.lrs) == {f: max(search.lr_grid) for f in main.families}


def test_unknown_names_and_budgets_are_refused():
    with pytest.raises(ValueError, match="no CPU-budget run of 'fig9'.*how-many-neurons-A"):
        cb.cpu_config("fig9")
    with pytest.raises(ValueError, match="unknown budget 'gpu'.*cpu, cpu-x2, cpu-x4"):
        rec.config_for("how-many-neurons-A", "paper", budget="gpu")
    assert rec.config_for("how-many-neurons-A", "paper", budget="cpu") == cpu("how-many-neurons-A")
    c = rec.config_for("how-many-neurons-A", "paper", seeds=(3,), budget="cpu")
    assert c.seeds == (3,)
