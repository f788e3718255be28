"""The Fig. 4 analysis on planted losses: curves, the loss at the largest target and ratios."""

import pytest
import torch

from gated_attention.analysis.family_losses import curves, late_fall, members
from gated_attention.experiments import architectures_config


def planted():
    config = architectures_config("smoke", "teacher")  # targets (300, 600), 2 seeds
    G = len(config.groups())
    loss = torch.empty(G, 2, dtype=torch.float64)
    for k, (fam, target, _) in enumerate(config.groups()):
        base = 10.0 ** -config.families.index(fam) * (2.0 if target == 300 else 1.0)
        loss[k] = torch.tensor([base, 3 * base])
    counts = torch.tensor([t + 1 for _, t, _ in config.groups()])
    return config, {"eval_loss": loss, "counts": counts}


def test_curves_and_ratios_read_the_planted_losses():
    config, tensors = planted()
    c = {cv.family: cv for cv in curves(config, tensors)}
    assert c["gated"].counts == (301, 601)
    assert c["gated"].mean == pytest.approx((4.0, 2.0))
    assert c["dense"].low == pytest.approx((0.2, 0.1)) and c["dense"].high == pytest.approx(
        (0.6, 0.3)
    )
    lstm, dense, gated = (members(config, tensors, f) for f in ("lstm", "dense", "gated"))
    assert lstm.mean_all == pytest.approx(2e-2)  # the seed mean at the largest target
    assert dense.mean_all / gated.mean_all == pytest.approx(0.1)
    # the worst seed at the largest target: 3 x base, not the mean 2 x base
    assert max(lstm.losses) == pytest.approx(3e-2)
    with pytest.raises(ValueError, match="not in this run"):
        members(config, tensors, "mamba")


def test_a_diverged_seed_is_not_hidden():
    config, tensors = planted()
    tensors["eval_loss"][0, 1] = float("nan")
    gated = curves(config, tensors)[0]
    assert gated.high[0] == float("inf") and gated.mean[0] == float("inf")
    assert gated.low[0] == pytest.approx(2.0)


def test_late_fall_reads_the_end_of_the_planted_curves():
    config, tensors = planted()
    G = len(config.groups())
    falling = torch.tensor([8.0, 8.0, 4.0, 4.0, 2.0, 2.0, 1.0, 1.0, 0.5, 0.5], dtype=torch.float64)
    curves_ = falling[None, :, None].expand(G, 10, 2).clone()
    gated_top = [k for k, g in enumerate(config.groups()) if g[0] == "gated" and g[1] == 600][0]
    curves_[gated_top] = 1.0  # flat: converged
    tensors["train_curves"] = curves_
    assert late_fall(config, tensors, "gated") == pytest.approx(0.0)
    assert late_fall(config, tensors, "lstm") == pytest.approx(0.5)  # windows 1, 1 -> 0.5, 0.5
    with pytest.raises(ValueError, match="too short"):
        late_fall(config, tensors, "lstm", fraction=0.6)


def test_fig4b_rows_read_the_planted_ood_losses():
    from gated_attention.analysis.family_losses import fig4b_rows

    config, tensors = planted()
    tensors["ood_loss"] = tensors.pop("eval_loss")  # the rows read the OOD loss
    tensors["eval_loss"] = torch.full_like(tensors["ood_loss"], 0.1)  # every seed learned
    rows, _, best_other = fig4b_rows(config, tensors, gd_ood=0.5, gd_in=0.1, bar=1.05)
    rows = {k: r.value for k, r in rows.items()}
    # largest target, family i: seeds (10^-i, 3 x 10^-i), seed median 2 x 10^-i; GRU is i = 3
    assert best_other == "lru_inout_mlp"
    assert rows["fig4b.gru_below_gd"] == pytest.approx(4e-3)
    assert rows["fig4b.gru_below_gd_significant"] == pytest.approx(6e-3)
    assert rows["fig4b.lstm_below_gd"] == pytest.approx(4e-2)
    assert rows["fig4b.lstm_below_gd_significant"] == pytest.approx(6e-2)
    assert rows["fig4b.gru_best"] == pytest.approx(1e3)
    assert rows["fig4b.lru_inout_below_lru"] == pytest.approx(0.1)
    assert rows["fig4b.lru_below_mlp"] == pytest.approx(100)


def test_unstable_names_diverged_and_worse_than_zero_seeds():
    from gated_attention.analysis.family_losses import unstable
    from gated_attention.readings.fig4_families import UnstableRow, unstable_rows

    config, tensors = planted()
    assert unstable(config, tensors) == [("gated", 300, 2, 2), ("gated", 600, 1, 2)]  # 2, 6; 3
    tensors["eval_loss"][2, 0] = float("nan")  # dense at 300: one seed diverged
    assert ("dense", 300, 1, 2) in unstable(config, tensors)
    assert unstable(config, tensors, limit=None) == [("dense", 300, 1, 2)]  # non-finite only
    rows = unstable_rows(config, tensors)
    assert rows[:2] == [
        UnstableRow("gated RNN (diagonal)", 300, 2, 2),
        UnstableRow("gated RNN (diagonal)", 600, 1, 2),
    ]
    tensors["eval_loss"][:] = 0.5
    assert unstable_rows(config, tensors) == []
