"""Eq. (1): the parallel and recurrent forms of linear self-attention agree."""

import pytest
import torch

from gated_attention import LinearSelfAttention, random_attention


@pytest.mark.parametrize("d", [1, 3, 6])
def test_parallel_equals_recurrent(d):
    att = random_attention(d, seed=d)
    x = torch.randn(4, 9, d, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    assert torch.allclose(att(x, "parallel"), att(x, "recurrent"), atol=1e-12, rtol=0)


def test_matches_eq1_written_out():
    """y_t = sum_{t'<=t} v_t' (k_t' . q_t), computed term by term."""
    att = random_attention(3, seed=0)
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    V, K, Q = x @ att.W_V.T, x @ att.W_K.T, x @ att.W_Q.T
    y = torch.zeros_like(V)
    for t in range(5):
        for s in range(t + 1):
            y[:, t] += V[:, s] * (K[:, s] * Q[:, t]).sum(-1, keepdim=True)
    assert torch.allclose(att(x), y, atol=1e-12)


def test_is_causal():
    """Changing a future input leaves earlier outputs unchanged."""
    att = random_attention(4, seed=2)
    x = torch.randn(1, 6, 4, dtype=torch.float64)
    x2 = x.clone()
    x2[:, 4] += 1.0
    y, y2 = att(x), att(x2)
    assert torch.equal(y[:, :4], y2[:, :4])
    assert not torch.allclose(y[:, 4:], y2[:, 4:])


def test_key_value_states_and_queries():
    att = random_attention(3, seed=3)
    x = torch.randn(2, 4, 3, dtype=torch.float64)
    M = att.key_value_states(x)  # (B, T, d_v, d_k)
    y = (M @ att.queries(x)[..., None])[..., 0]
    assert torch.allclose(y, att(x), atol=1e-12)


def test_low_rank_teacher_has_the_rank_asked_for():
    att = random_attention(12, seed=0, rank=6)
    assert torch.linalg.matrix_rank(att.W_V).item() == 6
    assert torch.linalg.matrix_rank(att.W_K.T @ att.W_Q).item() == 6


def test_same_seed_same_weights():
    a, b = random_attention(4, seed=7), random_attention(4, seed=7)
    assert torch.equal(a.W_Q, b.W_Q)
    assert not torch.equal(a.W_Q, random_attention(4, seed=8).W_Q)


@pytest.mark.parametrize("shape", [(5, 4), (2, 5, 3), (2, 5, 4, 1)], ids=["2d", "wrong-d", "4d"])
def test_wrong_input_shape_is_named(shape):
    att = random_attention(4, seed=0)
    with pytest.raises(ValueError, match=r"shape \(B, T, d=4\)"):
        att(torch.zeros(shape, dtype=torch.float64))


def test_mismatched_weights_are_named():
    with pytest.raises(ValueError, match="same shape"):
        LinearSelfAttention(W_V=torch.eye(3), W_K=torch.eye(3), W_Q=torch.ones(2, 3))
    with pytest.raises(ValueError, match="same size d"):
        LinearSelfAttention(W_V=torch.eye(3), W_K=torch.ones(3, 4), W_Q=torch.ones(3, 4))


def test_unknown_mode():
    with pytest.raises(ValueError, match="unknown mode"):
        random_attention(2, seed=0)(torch.zeros(1, 2, 2, dtype=torch.float64), "fast")
