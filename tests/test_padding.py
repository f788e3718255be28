"""Networks of one family at several widths as one ensemble (``models.padding``): each member
computes and trains as it does alone, and Fig. 4's families train their targets together."""

import dataclasses

import pytest
import torch

from gated_attention.experiments import architectures as arch
from gated_attention.models.family_registry import FAMILIES, family
from gated_attention.models.padding import pad_members, split_members

split = split_members

WIDTHS = (3, 7, 5)


def _groups(name: str, E: int = 2) -> list[dict]:
    g = torch.Generator().manual_seed(1)
    return [family(name).init(6, 6, w, E, g, torch.float64) for w in WIDTHS]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_padded_member_computes_what_it_computes_alone(name):
    groups = _groups(name)
    P, M = pad_members(groups, WIDTHS)
    garbage = {k: v + (1 - M[k]) * torch.randn_like(v) for k, v in P.items()}  # masked away
    x = torch.randn(6, 4, 8, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    y = family(name).forward(x, {k: garbage[k] * M[k] for k in P})
    alone = torch.cat([family(name).forward(x[2 * i : 2 * i + 2], p) for i, p in enumerate(groups)])
    torch.testing.assert_close(y, alone, rtol=0, atol=1e-12)
    assert all(int(M[k].sum()) == sum(int(g[k].numel()) for g in groups) for k in P)


def test_split_members_inverts_pad_members_and_keeps_gate_blocks_apart():
    groups = _groups("lstm")
    P, _ = pad_members(groups, WIDTHS)
    back = split_members(P, groups, WIDTHS)
    for g, b in zip(groups, back, strict=True):
        assert all(torch.equal(g[k], b[k]) for k in g)
    # the LSTM's 4 gates, each of 3 units, sit in 4 blocks of 7 rows: row 7 is gate f's first
    torch.testing.assert_close(P["b_ih"][0, 7:10], groups[0]["b_ih"][0, 3:6])
    assert P["b_ih"][0, 3:7].abs().sum() == 0


def test_an_axis_that_is_not_blocks_of_units_is_refused():
    narrow = {"W": torch.zeros(1, 4, 2)}  # 4 = 2 + 2: width plus a fixed 2, not blocks
    wide = {"W": torch.zeros(1, 5, 3)}
    with pytest.raises(ValueError, match="not a stack of blocks of units"):
        pad_members([narrow, wide], [2, 3])
    with pytest.raises(ValueError, match="different parameters"):
        pad_members([{"V": torch.zeros(1, 2)}, {"W": torch.zeros(1, 3)}], [2, 3])


def _config(families, steps=6):
    config = arch.architectures_config("smoke", "teacher")
    tc = dataclasses.replace(config.train, steps=steps, log_every=3, chunk_steps=3, dtype="float64")
    return dataclasses.replace(config, families=families, train=tc)


@pytest.mark.parametrize("name", arch.FIG4_FAMILIES)
def test_targets_trained_together_train_as_each_alone_and_the_padding_stays_zero(name, monkeypatch):
    config = _config((name,))
    alone = [config.train_group(k, progress=False) for k in range(len(config.groups()))]
    seen = []
    monkeypatch.setattr(arch, "split_members", lambda p, *a: seen.append(p) or split(p, *a))
    together = config.train_together([0, 1], progress=False)
    assert [r["width"] for r in together] == [r["width"] for r in alone]
    assert together[0]["width"] != together[1]["width"]
    for a, t in zip(alone, together, strict=True):
        assert a["count"] == t["count"]
        for k in a["params"]:
            torch.testing.assert_close(t["params"][k], a["params"][k], rtol=0, atol=1e-10)
        torch.testing.assert_close(t["losses"], a["losses"], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(t["eval_loss"], a["eval_loss"], rtol=1e-10, atol=1e-12)
    inits = [config._init_group(k)[1] for k in (0, 1)]
    _, masks = pad_members(inits, [r["width"] for r in together])
    (trained,) = seen  # trained without masks: the padding is still exactly zero
    assert all(bool((trained[k][masks[k] == 0] == 0).all()) for k in trained)
    assert any(bool((masks[k] == 0).any()) for k in trained)


def test_a_run_with_groups_together_has_a_job_per_family_and_the_groups_in_order(tmp_path):
    config = _config(("gated", "gru"), steps=2)
    together = dataclasses.replace(config, groups_together=True)
    assert [j.key for j in together.jobs()] == ["groups-0-1", "groups-2-3"]
    assert [j.key for j in config.jobs()] == [f"group-{k}" for k in range(4)]
    ours, metrics = together.compute(checkpoint=tmp_path / "checkpoint.pt", progress=False)
    theirs, _ = config.compute(checkpoint=None, progress=False)
    assert metrics["groups"] == [list(g) for g in config.groups()]
    assert ours["widths"].tolist() == theirs["widths"].tolist()
    torch.testing.assert_close(ours["eval_loss"], theirs["eval_loss"], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="of one family"):
        together.train_together([1, 2], progress=False)


@pytest.mark.parametrize("name", ["gated", "gru"])
def test_a_rate_search_trained_together_trains_each_rate_as_alone(name):
    config = arch.architectures_sweep_config("smoke", "teacher")
    tc = dataclasses.replace(config.train, steps=6, log_every=3, chunk_steps=3, dtype="float64")
    config = dataclasses.replace(config, families=(name,), train=tc, lr_grid=(3e-3, 3e-2, 1e-1))
    together = dataclasses.replace(config, groups_together=True)
    assert [j.key for j in together.jobs()] == ["groups-0-2"]
    rows = together.train_together([0, 1, 2], progress=False)
    for k, row in enumerate(rows):
        alone = config.train_group(k, progress=False)
        for p in alone["params"]:
            torch.testing.assert_close(row["params"][p], alone["params"][p], rtol=0, atol=1e-10)
        torch.testing.assert_close(row["eval_loss"], alone["eval_loss"], rtol=1e-9, atol=1e-12)
