"""Output-gating counts of students (readings/beyond_counts.py) on planted networks."""

import dataclasses

import torch

from gated_attention.constructions.compressed_output import construct_compressed
from gated_attention.constructions.gated_rnn import construct_rnn
from gated_attention.experiments import teacher_identification_config
from gated_attention.models.attention import LinearSelfAttention
from gated_attention.readings.beyond_counts import student_output_counts


@dataclasses.dataclass
class _Run:
    """What ``student_output_counts`` reads of a results entry."""

    config: object
    nets: list
    tensors: dict

    def students(self):
        return self.nets


def _planted(build):
    config = dataclasses.replace(teacher_identification_config("smoke"), eval_batch=16)
    nets = []
    for seed in config.seeds:
        t = config.task(seed).teacher
        layer = LinearSelfAttention(
            **{k: getattr(t, k).detach().double() for k in ("W_V", "W_K", "W_Q")}
        )
        nets.append(build(layer))
    return _Run(config, nets, {"eval_loss": torch.zeros(len(config.seeds))})


def test_the_compressed_construction_counts_ten():
    rows = student_output_counts(_planted(construct_compressed), "planted")
    assert [(r.n, r.m, r.lam_one, r.lam_zero) for r in rows] == [(14, 10, 10, 4)] * 2
    assert all(r.learned for r in rows) and [r.seed for r in rows] == [0, 1]


def test_the_symmetric_construction_counts_sixteen():
    rows = student_output_counts(_planted(lambda a: construct_rnn(a, "symmetric")), "sym")
    assert [(r.n, r.m) for r in rows] == [(14, 16)] * 2


def test_a_member_two_recorded_runs_hold_is_counted_once(monkeypatch):
    # the quick profile's run (seeds 3-7) is also part of the twenty-seed run (seeds 3-22);
    # the paper-budget seeds 0 and 1 trained on a CPU and on a GPU stay two members each
    from gated_attention.readings import beyond_counts as oc

    def stub(run, label):
        return [oc.OutputCount(label, int(s), 0, 0, 0, 0, 0, 0.0, True) for s in run.config.seeds]

    monkeypatch.setattr(oc, "student_output_counts", stub)
    rows = oc.recorded_output_counts()
    by_run = {}
    for r in rows:
        by_run.setdefault(r.run, []).append(r.seed)
    assert "quick" not in by_run and by_run["quick-20-seeds"] == list(range(3, 23))
    assert by_run["paper-gpu"] == [0, 1, 2] and by_run["paper-seed0"] == [0]
    assert by_run["cpu"] == [3, 4, 5, 6, 7]  # a longer budget: other members
