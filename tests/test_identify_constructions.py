"""``workbench.identify`` compares a student with the construction that fits its teacher
(symmetric for a full-rank teacher, low rank for a rank-deficient one) and refuses a
side-gating student with a message that says what to use instead."""

import dataclasses

import pytest
import torch

from gated_attention import construct_rnn, neuron_count
from gated_attention import workbench as wb
from gated_attention.models import LinearSelfAttention, random_attention


def test_a_rank_2_teacher_is_compared_with_the_low_rank_construction():
    teacher = random_attention(4, seed=0, rank=2)
    assert neuron_count("low_rank", 4, 2, 2)["n"] == 6
    found = wb.identify(construct_rnn(teacher, "low_rank"), teacher, T=8)
    assert found.construction == (6, 4, 2)  # r_V r_KQ key-value, r_KQ query neurons
    assert "low rank" in found.construction_name and "= 2" in found.construction_name
    assert found.is_construction
    text = str(found)
    assert "construction compared with    low rank (App. A.4" in text
    assert "(construction: 6)" in text and "neuron for neuron" in text


def test_a_full_rank_teacher_is_compared_with_the_symmetric_construction():
    teacher = random_attention(4, seed=0)
    found = wb.identify(construct_rnn(teacher, "symmetric"), teacher, T=8)
    assert found.construction == (14, 10, 4)
    assert found.construction_name.startswith("symmetric (App. A.3")
    assert found.is_construction and "(construction: 14)" in str(found)


def test_the_two_ranks_are_read_separately():
    g = torch.Generator().manual_seed(1)
    W_V, W_K, W_Q = (torch.randn(4, 4, generator=g, dtype=torch.float64) for _ in range(3))
    W_K[2:] = 0.0  # rank W_K^T W_Q = 2, W_V of full rank 4
    teacher = LinearSelfAttention(W_V=W_V, W_K=W_K, W_Q=W_Q)
    name, counts = wb.teacher_construction(teacher)
    assert counts == (neuron_count("low_rank", 4, 4, 2)["n"], 8, 2) == (10, 8, 2)
    assert "rank W_V = 4" in name and "rank W_K^T W_Q = 2" in name
    found = wb.identify(construct_rnn(teacher, "low_rank"), teacher, T=6)
    assert (found.hidden, found.lam_one, found.lam_zero, found.lam_between) == (10, 8, 2, 0)
    assert found.score_kv < 1e-8 and found.poly_distance < 1e-8
    # (Score Q is not ~0 here: the query neurons hold R_KQ x_t, 2 of the 4 dimensions of
    # q_t = W_Q x_t, since W_Q keeps its full rank; the scores are analysis.scores' business)


def test_ranks_use_a_tolerance_and_a_zero_teacher_needs_no_neurons():
    teacher = random_attention(4, seed=2, rank=3, dtype=torch.float32)  # rounding, not rank 4
    assert wb.teacher_construction(teacher)[1] == (12, 9, 3)
    z = torch.zeros(3, 3)
    assert wb.teacher_construction(LinearSelfAttention(W_V=z, W_K=z, W_Q=z))[1] == (0, 0, 0)


def test_fewer_neurons_than_the_construction_is_not_called_more():
    low = random_attention(4, seed=0, rank=2)
    found = wb.identify(construct_rnn(low, "low_rank"), low, T=8)
    assert "fewer" not in str(found)
    # read against the symmetric construction's 14, these 6 neurons are fewer, not more
    against_14 = dataclasses.replace(found, construction=(14, 10, 4))
    assert "attention, with fewer neurons than the construction" in str(against_14)


def test_a_side_gating_student_is_refused_with_what_to_use_instead():
    teacher = random_attention(4, seed=0)
    side = construct_rnn(teacher, "side")
    with pytest.raises(ValueError, match="side gating") as err:
        wb.identify(side, teacher, T=8)
    msg = str(err.value)
    assert "input-output gating" in msg and "analysis.prune" in msg
    assert "neuron_count('side', 4)['n'] = d^2 = 16" in msg
    assert "merge" in msg  # not the bare merging error from deep inside the analysis
