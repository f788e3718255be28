"""Fig. 3A/B read from a sweep (``report.size_sweeps``): the chapter's estimators, unchanged."""

import numpy as np
import pytest
import torch

from gated_attention import analysis
from gated_attention import experiments as ex
from gated_attention.report import scorecard
from gated_attention.report.size_sweeps import read_sweep, reading_lines, reading_records


@pytest.fixture
def sweep_run(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path / "build"))
    monkeypatch.setattr(scorecard, "_SESSION", [])
    return ex.run(ex.how_many_neurons_config("smoke", "A"), progress=False)


def test_a_reading_is_the_estimators_of_the_chapter(sweep_run, monkeypatch):
    c = sweep_run.config
    seen = []
    real = analysis.sweep_success
    monkeypatch.setattr(analysis, "sweep_success", lambda run, x: seen.append(x) or real(run, x))
    r = read_sweep(sweep_run, 0.5)
    # Score KV on the chapter's inputs: 256 sequences of seed 7
    torch.testing.assert_close(seen[0], analysis.gaussian_inputs(c.d, c.T, 256, seed=7))
    sizes, L = analysis.normalised_losses(c, sweep_run.tensors["eval_loss"])
    np.testing.assert_array_equal(r.sizes, sizes)
    np.testing.assert_array_equal(r.L, L)
    tr = analysis.transition_point(sizes, L, threshold=0.5, n_boot=1000, seed=0)
    assert r.loss == tr
    x = analysis.gaussian_inputs(c.d, c.T, 256, seed=7)
    f = analysis.sweep_success(sweep_run, x)[3]
    assert r.learned.estimate == f.estimate and list(r.learned.k) == list(f.k)
    assert r.panel == "A" and r.spent == c.train.steps * c.T
    text = reading_lines(r)
    assert text.count("n = m =") == len(c.sizes) and f"learned {f.k[0]}/{f.R}" in text


def test_its_rows_carry_the_run_and_the_budget(sweep_run):
    r = read_sweep(sweep_run, 0.5)
    rows = reading_records(r, profile="paper", run="hmn-test")
    assert [x.id for x in rows] == ["fig3a.transition", "fig3a.transition_learned"]
    assert all(x.run == "hmn-test" for x in rows)
    assert rows[0].budget.startswith(f"{r.config.train.steps:,} steps")
    assert "T = 5, paper 32" not in rows[0].budget and f"T = {r.config.T}" in rows[0].budget


def _reading(k, R=5, sizes=(8, 14, 20, 24)):
    """A reading with learned counts ``k`` per size (of R seeds), the rest from a smoke config."""
    import dataclasses
    from types import SimpleNamespace

    from gated_attention.report.size_sweeps import SweepReading

    c = ex.how_many_neurons_config("smoke", "A")
    c = dataclasses.replace(c, train=dataclasses.replace(c.train, steps=100_000), T=32)
    learned = SimpleNamespace(k=list(k), R=R, estimate=14, sizes=list(sizes))
    return SweepReading(
        "A", c, np.array(sizes), np.ones((len(sizes), R)), SimpleNamespace(estimate=20), learned
    )


def test_the_sentence_says_from_which_size_every_seed_learned():
    from gated_attention.report.size_sweeps import all_learn_from, reading_sentence

    assert all_learn_from(_reading([0, 5, 5, 5])) == 14
    assert all_learn_from(_reading([0, 5, 4, 5])) == 24  # a miss at 20 breaks the run from 14
    assert all_learn_from(_reading([5, 5, 5, 4])) is None
    text = reading_sentence(_reading([0, 5, 5, 5]), 14)
    assert text.startswith("Fig. 3A at 100,000 steps, T = 32, 5 seeds: n* is 20 by the loss")
    assert "and 14 by the per-seed criterion" in text
    assert "construction's 14 neurons (the paper: about 28)" in text
    assert text.endswith("every seed learns the construction at every size from n = 14 on.")
    assert "not every seed" in reading_sentence(_reading([5, 5, 5, 4]), 14)
