"""The printed tables of the teacher-identification chapter (report/teacher_tables) and the
group its Fig. 2C draws (report/teacher_plots.merge_figure_group), on planted networks and rows."""

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from gated_attention import analysis, construct_rnn, random_attention
from gated_attention.report import members, teacher_tables
from gated_attention.report.teacher_plots import merge_figure_group, planted_merge_group


def _row(seed, hidden=(14, 10, 4), output=12, merged=0, rev=None, loss=1e-6):
    h, one, zero = hidden
    return members.MemberRow(
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
    lines = teacher_tables.prune_sweep(dead, x, thresholds=(1e-6, 1e-2)).splitlines()
    assert lines[0].split() == ["threshold", "hidden", "output", "max", "|change", "of", "y|"]
    assert lines[1].split() == ["1e-06", "14", str(net.m), "0"]
    assert lines[2].split() == ["0.01", "14", str(net.m), "0"]


def test_merge_lines_and_the_figure_group_name_the_first_merged_seed():
    teacher = random_attention(4, seed=0)
    net, group = planted_merge_group(teacher)
    merged = analysis.merge(net, rtol=1e-8)
    none = analysis.Merged(net, [], [], list(range(net.m)))
    rev = SimpleNamespace(merge_searched=True, merged=merged, pruned=SimpleNamespace(net=net))
    rev0 = SimpleNamespace(merge_searched=False, merged=none, pruned=SimpleNamespace(net=net))
    rows = [_row(3, rev=rev0), _row(4, output=15, merged=1, rev=rev)]
    assert teacher_tables.merge_lines(rows).splitlines() == [
        "seed 3: 12 output neurons, merge searched: False; groups merged: none",
        f"seed 4: 15 output neurons, merge searched: True; groups merged: {[group]}",
    ]
    shown_net, shown_group, text = merge_figure_group(rows, teacher)
    assert shown_net is net and shown_group == group
    assert text.startswith(
        f"the figure shows a trained network's merged group: seed 4, output neurons {group}"
    )
    planted_net, planted, text = merge_figure_group(rows[:1], teacher)  # nothing merged
    assert planted == group and planted_net.m == net.m
    assert text.startswith("Fig. 2C is NOT reproduced in this build")
    assert text.endswith(f"analysis.merge finds it: {[group]}")


def test_drops_text_and_machines_text_summarise_the_runs():
    text = teacher_tables.drops_text([(2.0, 40.0), (2.6, 4.85), (1.5, 1e6)])
    assert text.startswith("\nin every spectrum with a surplus (3), the drop right after")
    assert "exceeds every ratio within it: True; drops 4.85 to 1e+06" in text
    assert text.endswith("ratios within at most 2.6")
    assert ": False;" in teacher_tables.drops_text([(5.0, 4.0)])
    gpu = SimpleNamespace(meta={"hardware": {"device": "cuda"}})
    cpu = SimpleNamespace(meta={"hardware": {"device": "cpu"}})
    found = [(gpu, _row(1, (37, 13, 24), 33)), (gpu, _row(0, (27, 11, 16))), (cpu, _row(0))]
    lines = teacher_tables.machines_text(found).splitlines()
    assert lines[0] == (
        "seed 0: cuda: 27 hidden = 11 + 16 (+ 0 between), 12 output, loss/var 1.0e-06; "
        "cpu: 14 hidden = 10 + 4 (+ 0 between), 12 output, loss/var 1.0e-06"
    )
    assert lines[1].startswith("seed 1: cuda: 37 hidden = 13 + 24")


def test_the_numbers_the_prose_quotes():
    assert teacher_tables.wilson_numbers(5) == {
        "ti-wilson-none-high": "0.43",
        "ti-wilson-all-low": "0.57",
    }
    assert teacher_tables.paper_counts() == (14, 10, 4, 13)
    assert teacher_tables.loss_line(1e-3, 0.5) == (
        "final held-out loss 0.001 (teacher output variance 0.5, relative 0.002)"
    )


@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_print_setup_names_the_profile_and_the_papers_values(profile, capsys):
    from gated_attention import experiments

    config = experiments.teacher_identification_config(profile)
    paper = experiments.teacher_identification_config("paper")
    teacher_tables.print_setup(profile, config, paper)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"profile: {profile}"
    assert lines[1] == (
        f"student: n = {config.n} hidden, m = {config.m} output-gating neurons (paper: 100, 100)"
    )
    assert lines[2] == f"sequences: T = {config.T} (paper: 32)"
    assert lines[3].endswith("(paper: 1,000,000)")
