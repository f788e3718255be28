"""The chapter "Which RNNs learn attention" (report/fig4a_tables): its profile line and captions
read the configs, Table 3 strikes the excluded seeds, and the search minutes read the recording."""

from gated_attention import experiments
from gated_attention.analysis.family_losses import Members
from gated_attention.report import fig4a_tables


def test_profile_text_names_the_budget_beside_the_paper_profiles():
    c = experiments.architectures_config("quick", "teacher")
    paper = experiments.architectures_config("paper", "teacher")
    lines = fig4a_tables.profile_text("quick", c, paper).splitlines()
    assert lines[0] == (
        f"profile: quick; d = {c.d}, T = {c.T} (paper profile: {paper.T}), {len(c.seeds)} seeds,"
    )
    assert lines[1] == (
        f"{c.train.steps:,} steps of batch {c.train.batch_size} "
        f"(paper profile: {paper.train.steps:,}),"
    )
    assert lines[2] == f"parameter targets {list(c.targets)}"


def test_table1_and_table3_put_their_caption_first():
    import torch

    sweep = experiments.architectures_sweep_config("smoke", "teacher")
    groups = sweep.groups()
    loss = torch.full((len(groups), len(sweep.seeds)), 0.5, dtype=torch.float64)
    text = fig4a_tables.table1(sweep, {"eval_loss": loss})
    caption, table = text.split("\n\n")
    assert caption == (
        f"**Table 1.** Normalised held-out loss after {sweep.train.steps:,} steps at "
        f"{sweep.targets[0]:,} parameters, per learning rate."
    )
    assert len(table.splitlines()) == 2 + len(sweep.families)
    ms = {"gru": Members("gru", 4000, (0.5, 2.0, 0.7), (False, False, False), (False, True, False))}
    table = fig4a_tables.table3(ms).split("\n\n")
    assert table[0].startswith("**Table 3.** Each family's seeds at the largest parameter count")
    lines = table[1].splitlines()
    assert lines[2].startswith("| GRU | 0.5, ~~2~~, 0.7 | 1 of 3 ")
    assert "| **0.6** |" in lines[2]  # the median of the two kept seeds
    other = fig4a_tables.table3(ms, caption="**Table 6.** As Table 3.")
    assert other.startswith("**Table 6.** As Table 3.\n\n| family |")


def test_search_minutes_read_the_recording():
    assert fig4a_tables.search_minutes("no-such-run") == "n/a"
    run = experiments.recorded("architectures-teacher-lr-cpu")
    expected = f"{run.meta['wall_time_s'] / 60:.0f}"
    assert fig4a_tables.search_minutes("architectures-teacher-lr-cpu") == expected
