"""The readings behind the teacher-identification chapter's tables (readings/teacher_members,
teacher_runs, teacher_merge) and the group its Fig. 2C draws, on planted networks and rows."""

import dataclasses
from types import SimpleNamespace

import torch

from gated_attention import analysis, construct_rnn, random_attention
from gated_attention.readings import teacher_members, teacher_runs, teacher_scores
from gated_attention.readings.teacher_merge import merge_figure_group, planted_merge_group
from gated_attention.report import scorecard


def _row(seed, hidden=(14, 10, 4), output=12, merged=0, rev=None, loss=1e-6):
    h, one, zero = hidden
    return teacher_members.MemberRow(
        seed, h, one, zero, h - one - zero, output, loss, 1e-4, 1e-4, True, merged, rev=rev
    )


def test_pruning_the_construction_with_dead_neurons_is_lossless_at_every_threshold():
    net = analysis.network(construct_rnn(random_attention(4, seed=0), "symmetric"))
    dead = dataclasses.replace(  # one extra hidden neuron that reads nothing
        net,
        W_in1=torch.cat([net.W_in1, torch.zeros(1, net.W_in1.shape[1], dtype=net.W_in1.dtype)]),
        W_in2=torch.cat([net.W_in2, torch.zeros(1, net.W_in2.shape[1], dtype=net.W_in2.dtype)]),
        nu=torch.cat([net.nu, torch.tensor([0.0], dtype=net.nu.dtype)]),
        W_out1=torch.cat([net.W_out1, torch.zeros(net.m, 1, dtype=net.W_out1.dtype)], dim=1),
        W_out2=torch.cat([net.W_out2, torch.zeros(net.m, 1, dtype=net.W_out1.dtype)], dim=1),
    )
    x = analysis.gaussian_inputs(4, 5, 16, seed=1)
    steps = teacher_members.prune_sweep(dead, x, thresholds=(1e-6, 1e-2))
    assert steps == [
        teacher_members.PruneStep(1e-6, 14, net.m, 0.0),
        teacher_members.PruneStep(1e-2, 14, net.m, 0.0),
    ]
    assert teacher_members.THRESHOLDS == (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


def test_the_figure_group_is_the_first_merged_seeds_or_a_planted_one():
    teacher = random_attention(4, seed=0)
    net, group = planted_merge_group(teacher)
    merged = analysis.merge(net, rtol=1e-8)
    none = analysis.Merged(net, [], [], list(range(net.m)))
    rev = SimpleNamespace(merge_searched=True, merged=merged, pruned=SimpleNamespace(net=net))
    rev0 = SimpleNamespace(merge_searched=False, merged=none, pruned=SimpleNamespace(net=net))
    rows = [_row(3, rev=rev0), _row(4, output=15, merged=1, rev=rev)]
    shown = merge_figure_group(rows, teacher)
    assert shown.net is net and shown.group == group and shown.seed == 4
    assert not shown.planted and shown.error == merged.errors[0]
    planted = merge_figure_group(rows[:1], teacher)  # nothing merged
    assert planted.planted and planted.group == group and planted.net.m == net.m
    assert planted.found == [group]


def test_drops_and_machine_rows_summarise_the_runs():
    def spec(within, drop):
        return teacher_members.Spectrum("s", "query", 5, 4, 4, within, drop, (1.0,))

    shown = [spec(2.0, 40.0), spec(2.6, 4.85), spec(1.5, 1e6), spec(3.0, None)]
    d = teacher_runs.drops(shown)
    assert (d.surplus, d.above, d.over_ten, d.all_above) == (3, 3, 2, True)
    assert (d.low, d.high, d.within) == (4.85, 1e6, 2.6)
    assert not teacher_runs.drops([spec(5.0, 4.0)]).all_above
    assert teacher_runs.drops([]).surplus == 0
    gpu = SimpleNamespace(meta={"hardware": {"device": "cuda"}})
    cpu = SimpleNamespace(meta={"hardware": {"device": "cpu"}})
    found = [(gpu, _row(1, (37, 13, 24), 33)), (gpu, _row(0, (27, 11, 16))), (cpu, _row(0))]
    rows = teacher_members.machine_rows(found)
    assert [(r.seed, r.device, r.hidden) for r in rows] == [
        (0, "cuda", 27),
        (0, "cpu", 14),
        (1, "cuda", 37),
    ]
    assert rows[2] == teacher_members.MachineRow(1, "cuda", 37, 13, 24, 0, 33, 1e-6)


def test_the_numbers_the_prose_quotes():
    lo, hi = teacher_members.wilson_ends(5)
    assert (f"{lo:.2f}", f"{hi:.2f}") == ("0.43", "0.57")
    paper = teacher_scores.paper_counts(scorecard.paper_values())
    row = teacher_scores.paper_row(paper)
    assert (row["hidden"], row["lam_one"], row["lam_zero"], row["output"]) == (14, 10, 4, 13)
    assert row["seed"] == "paper" and row["norm_loss"] is None


def test_the_spectra_of_the_construction_have_no_surplus():
    teacher = random_attention(4, seed=0)
    built = analysis.network(construct_rnn(teacher, "symmetric"))
    x = analysis.gaussian_inputs(4, 8, 64, seed=7)
    counts = {"key-value": 10, "query": 4}
    (kv, q) = teacher_members.member_spectra(built, [], x, counts)
    assert (kv.label, kv.group, kv.neurons, kv.shown, kv.count) == (
        "construction",
        "key-value",
        10,
        10,
        10,
    )
    assert kv.drop is None and q.drop is None and q.neurons == 4
    assert kv.values[0] == 1.0 and len(kv.values) == 10
