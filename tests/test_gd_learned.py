"""The Sec. 5.2 analysis (readings/gd_learned.py) on planted truth: the GD network, known gaps."""

import types

import numpy as np
import pytest
import torch

from gated_attention.engine import stack_students
from gated_attention.experiments import in_context_regression as icr
from gated_attention.models.gated_rnn import GatedRNN
from gated_attention.readings.gd_learned import analyse_regression
from gated_attention.tasks import regression


def planted_run(table2_gap=0.01, sweep_gaps=(0.5, 0.4, 0.001, 0.003)):
    """A run of the smoke config (sizes 12 and 24, seeds 0 and 1) with planted tensors: every
    network is the 12-neuron GD network, Table 2's seed mean loses exactly GD + table2_gap on
    every sequence, and member e has relative gap sweep_gaps[e] (members: sizes outer)."""
    config = icr.regression_config("smoke", eval_batch=400)
    wide = GatedRNN(6, 24, 24, 3)  # only sets the padded size: the planted networks are GD's
    params, _ = stack_students([regression.gd_rnn()] * 4 + [wide])
    params = {k: v[:4] for k, v in params.items()}
    T = {
        "params": params,
        "sizes": torch.tensor([12, 12, 24, 24]),
        "seeds": torch.tensor([0, 1] * 2),
    }
    for key, ood in (("eval", False), ("ood", True)):
        z, y = config.evaluation_set(ood)
        gd = regression.query_loss(regression.gd_predict(z, regression.ETA_STAR, 3), y[:, -1])
        T[f"{key}_gd"] = gd
        T[f"{key}_rnn_table2"] = gd + table2_gap if key == "eval" else 2 * gd
        gap = torch.tensor(sweep_gaps, dtype=torch.float64) * gd.mean()
        T[f"{key}_gap"], T[f"{key}_gap_se"] = gap, torch.full((4,), 1e-5, dtype=torch.float64)
        T[f"{key}_rnn_mean"] = gd.mean() + gap
    return types.SimpleNamespace(config=config, tensors=T, params=params, path="planted")


def test_the_planted_gd_network_and_gaps_are_read_back():
    a = analyse_regression(planted_run())
    assert a.n_top == 24 and a.top.tolist() == [2, 3] and a.top_seeds.tolist() == [0, 1]
    assert a.gap == pytest.approx(0.01, abs=1e-12) and a.gap_se == pytest.approx(0, abs=1e-12)
    assert a.rnn_loss == pytest.approx(7 / 74 + 0.01, abs=1e-12)
    np.testing.assert_allclose(a.top_gap / a.gd_mean, [0.001, 0.003])
    assert a.raw_mean == pytest.approx(a.gd_mean * 1.002)
    # the GD network's polynomial: every GD term is eta*, nothing else
    np.testing.assert_allclose(a.coefs, regression.ETA_STAR, atol=1e-12)
    assert a.coef_rel_error < 1e-10 and a.residual_ratios.max() < 1e-10
    # Fig. 3C: relative gaps 0.5, 0.4 at n = 12 and 0.001, 0.003 at n = 24; threshold 2%
    assert a.sweep == (12, 24)
    np.testing.assert_allclose(a.gap_table, [[0.5, 0.4], [0.001, 0.003]])
    assert a.transition_learned(icr.TRANSITION_THRESHOLD).estimate == 24
    # memory: the GD network's 12 hidden neurons are all used; 9 remember (lam = 1), 3 do not
    gd = regression.gd_rnn()
    assert len(a.lam_used) == 2 * gd.n
    np.testing.assert_allclose(np.sort(a.lam_used), np.sort(np.tile(gd.lam.detach().numpy(), 2)))
    assert len(a.memory_lam) == 2 * 9 and (a.memory_lam == 1).all()
    # OOD: the seed mean loses twice GD's loss on every sequence
    assert a.ood_gap == pytest.approx(a.ood_gd) and a.ood_rnn == pytest.approx(a.ood_gd * 1.002)


def test_the_score_rows_carry_the_planted_values_in_the_chapters_order():
    from gated_attention.readings.gd_learned import score_rows

    a = analyse_regression(planted_run())
    rows = score_rows(a, 2, run="planted")
    assert [r.id for r in rows] == [
        "sec5.rnn_loss",
        "sec5.loss_gap_rel",
        "sec5.loss_gap_se",
        "table2.coef_rel_error_max",
        "table2.coef_rel_error_worst_t",
        "table2.residual_ratio",
        "fig3c.transition_learned",
        "sec5.ood_rnn_loss",
        "sec5.ood_gd_loss",
    ]
    values = {r.id: r for r in rows}
    assert values["sec5.rnn_loss"].ours == pytest.approx(a.rnn_loss)
    assert values["sec5.loss_gap_rel"].ours == pytest.approx(0.01 / a.gd_mean)
    assert values["fig3c.transition_learned"].ours == 24
    assert values["fig3c.transition_learned"].seeds == 2 and values["sec5.rnn_loss"].seeds == 2
    assert values["sec5.ood_gd_loss"].seeds is None and all(r.run == "planted" for r in rows)


def test_the_fig3c_edge_reads_the_planted_gaps_over_zero_minus_gd():
    from gated_attention.readings import fig3_edges

    gaps = (0.01, 0.005, 0.001, 0.003)  # relative to the GD loss, per member
    s = fig3_edges.from_regression(planted_run(sweep_gaps=gaps))
    assert s.panel == "C" and s.sizes.tolist() == [12, 24] and s.construction == 12
    gd = planted_run().tensors["eval_gd"].mean().item()
    want = np.array(gaps).reshape(2, 2) * gd / (regression.ZERO_LOSS - regression.GD_MIN_LOSS)
    np.testing.assert_allclose(s.excess, want)
    # medians: 12 -> about 1.7e-3, 24 -> about 4.0e-4: below 1e-2 from 12, below 1e-3 from 24
    assert {L: e.estimate for L, e in s.edges().items()} == {1e-2: 12, 1e-4: None, 1e-6: None}


def test_bad_runs_are_named():
    run = planted_run()
    del run.tensors["eval_rnn_table2"]
    with pytest.raises(ValueError, match="lacks eval_rnn_table2.*older version"):
        analyse_regression(run)
    with pytest.raises(TypeError, match="expected a run of RegressionConfig"):
        analyse_regression(types.SimpleNamespace(config=object(), tensors={}))


def test_worst_t_is_the_worst_step_not_the_mean_over_steps():
    """coef_rel_error_worst_t reads the seed mean at each t: a tilt over t that averages out
    is invisible to coef_rel_error and visible here; transition_learned counts seeds per size."""
    from types import SimpleNamespace

    import numpy as np

    from gated_attention.readings.gd_learned import RegressionAnalysis
    from gated_attention.tasks import regression

    eta = regression.ETA_STAR
    tilt = np.array([0.9, 1.0, 1.1])[None, :, None] * np.ones((2, 3, 3))  # (seeds, t, i)
    a = SimpleNamespace(coefs=eta * tilt)
    assert RegressionAnalysis.coef_rel_error_worst_t.fget(a) == pytest.approx(0.1)
    a.per_seed_coefs = a.coefs.mean(axis=1)
    assert RegressionAnalysis.coef_rel_error.fget(a) == pytest.approx(0.0, abs=1e-12)
    b = SimpleNamespace(sweep=(8, 12, 16), gap_table=np.array([[0.5, 0.5], [0.01, 0.5], [0, 0]]))
    f = RegressionAnalysis.transition_learned(b, 0.02)
    assert f.k == (0, 1, 2) and f.estimate == 12
