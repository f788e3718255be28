"""Signatures a newcomer meets first: GatedRNN's default m, LinearSelfAttention's keyword-only
matrices, the type hints of ``workbench.fit``."""

import inspect
import typing

import pytest
import torch

from gated_attention import workbench as wb
from gated_attention.engine import TrainResult
from gated_attention.models import GatedRNN, LinearSelfAttention
from gated_attention.tasks import TeacherStudentTask


def test_gated_rnn_defaults_to_as_many_output_as_hidden_neurons():
    rnn = GatedRNN(4, 24)
    assert (rnn.n, rnn.m) == (24, 24) and rnn.W_out1.shape == (24, 24)
    assert rnn(torch.randn(2, 5, 4)).shape == (2, 5, 4)
    assert GatedRNN(4, 24, 7).m == 7
    assert GatedRNN(4, 24, side=True).m == 0
    with pytest.raises(ValueError, match="m \\(output-gating neurons\\)"):
        GatedRNN(4, 24, 0)


def test_attention_takes_its_matrices_by_keyword_only():
    W = torch.eye(3, dtype=torch.float64)
    with pytest.raises(TypeError, match="positional"):
        LinearSelfAttention(W, 2 * W, 3 * W)  # a swap by position can no longer run
    layer = LinearSelfAttention(W_Q=3 * W, W_V=W, W_K=2 * W)  # any order, by name
    assert torch.equal(layer.W_K, 2 * W) and torch.equal(layer.W_Q, 3 * W)
    params = list(inspect.signature(LinearSelfAttention).parameters.values())
    assert [p.name for p in params] == ["W_V", "W_K", "W_Q"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)


def test_fit_has_real_type_hints():
    hints = typing.get_type_hints(wb.fit)
    assert hints["student"] is GatedRNN and hints["task"] is TeacherStudentTask
    assert hints["return"] == GatedRNN | tuple[GatedRNN, TrainResult]
    returns = [typing.get_type_hints(f)["return"] for f in typing.get_overloads(wb.fit)]
    assert returns == [GatedRNN, tuple[GatedRNN, TrainResult]]
    history = [typing.get_type_hints(f)["history"] for f in typing.get_overloads(wb.fit)]
    assert history == [typing.Literal[False], typing.Literal[True]]
