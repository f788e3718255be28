"""The members of a teacher-identification run (readings/teacher_members): rows, the table the
chapter renders of them, and fractions."""

import dataclasses

import pytest

from gated_attention import analysis, construct_rnn, experiments
from gated_attention.readings import teacher_members as members
from gated_attention.readings import teacher_scores
from gated_attention.report import scorecard, table


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))


def _row(seed, counts, learned=False, merged=0):
    h, one, zero = counts
    return members.MemberRow(
        seed, h, one, zero, h - one - zero, 12, 1e-6, 1e-4, 1e-4, learned, merged, rev=None
    )


def test_fractions_count_exact_construction_learned_and_merges():
    rows = [_row(3, (14, 10, 4), True, 1), _row(4, (14, 9, 5), True), _row(5, (20, 10, 9))]
    f = members.fractions(rows)
    assert f["construction_counts"][:2] == (1, 3)  # (14, 9, 5) has the total but not the split
    assert f["learned"][:2] == (2, 3) and f["merge_found"][:2] == (1, 3)
    lo, hi = f["learned"][2]
    assert 0 < lo < 2 / 3 < hi < 1
    with pytest.raises(ValueError, match="no members"):
        members.fractions([])


def test_table_shows_the_paper_first_and_one_line_a_member():
    paper = teacher_scores.paper_row(teacher_scores.paper_counts(scorecard.paper_values()))
    cols = {k: k for k in ("seed", "hidden", "lam_one", "lam_zero", "between", "output")}
    lines = table.markdown([paper, _row(3, (14, 10, 4))], cols).splitlines()
    assert lines[2] == "| paper | 14 | 10 | 4 | - | 13 |"
    assert lines[3] == "| 3 | 14 | 10 | 4 | 0 | 12 |"


def test_shares_are_the_fractions_with_their_wilson_intervals():
    rows = [_row(3, (14, 10, 4), True), _row(4, (14, 9, 5), True), _row(5, (20, 10, 9))]
    at14, learned = members.shares(rows)
    assert (at14.key, at14.seeds, at14.of) == ("construction_counts", 1, 3)
    assert (learned.key, learned.seeds, learned.of) == ("learned", 2, 3)
    assert (learned.low, learned.high) == members.fractions(rows)["learned"][2]


def test_rows_of_a_run_match_reverse_engineering_each_member(cache):
    config = experiments.teacher_identification_config("smoke")
    run = experiments.run(config, progress=False)
    rows = members.member_rows(run, prune_tol=1e-3)
    assert [r.seed for r in rows] == list(config.seeds)
    for r, student, seed in zip(rows, run.students(), config.seeds, strict=True):
        rev = analysis.reverse_engineer(
            analysis.network(student), config.task(seed).teacher, T=config.T, prune_tol=1e-3
        )
        assert (r.hidden, r.output) == (rev.pruned.net.n, rev.pruned.net.m)
        assert r.lam_one == rev.groups.counts()["one"]
    assert all(r.loss == float(run.tensors["eval_loss"][e]) for e, r in enumerate(rows))


def test_the_construction_itself_is_a_learned_row(cache):
    config = experiments.teacher_identification_config("smoke")
    run = experiments.run(config, progress=False)
    teacher = config.task(config.seeds[0]).teacher
    built = analysis.network(construct_rnn(teacher, "symmetric"))
    rev = analysis.reverse_engineer(built, teacher, T=config.T, prune_tol=1e-9)
    assert (rev.pruned.net.n, rev.groups.counts()["one"], rev.groups.counts()["zero"]) == (
        members.CONSTRUCTION
    )
    assert run.config.d == 4


def test_held_out_values_are_medians_over_seeds():
    from types import SimpleNamespace

    def row(seed, loss, kv):
        r = _row(seed, (14, 10, 4))
        rev = SimpleNamespace(poly_distance=10 * kv)
        return dataclasses.replace(r, loss=loss, score_kv=kv, score_q=kv, rev=rev)

    rows = [row(3, 1e-6, 1e-5), row(4, 1e-3, 1e-2), row(5, 1e-5, 1e-4)]
    values = dict(members.held_out_values(rows))
    # medians: the one bad seed (4) does not decide, unlike the first seed alone would
    assert values["table1.loss_median"] == pytest.approx(1e-5)
    assert values["table1.score_kv_median"] == pytest.approx(1e-4)
    assert values["table1.poly_distance_median"] == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="no members"):
        members.held_out_values([])
