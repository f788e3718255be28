"""The per-member table of the teacher-identification chapter: rows, table and fractions."""

import dataclasses

import pytest

from gated_attention import analysis, construct_rnn, experiments
from gated_attention.report import members


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
    text = members.member_table([_row(3, (14, 10, 4))], paper=(14, 10, 4, 13))
    lines = text.splitlines()
    assert lines[1].split() == ["paper", "14", "10", "4", "13"]
    assert lines[2].split()[:6] == ["3", "14", "10", "4", "0", "12"]


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
    again = members.member_rows(run, prune_tol=1e-3, revs=[r.rev for r in rows])
    assert [dataclasses.astuple(a)[:-1] for a in again] == [
        dataclasses.astuple(r)[:-1] for r in rows
    ]
    with pytest.raises(ValueError, match="reverse engineerings"):
        members.member_rows(run, prune_tol=1e-3, revs=[rows[0].rev])


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
