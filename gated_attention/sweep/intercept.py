"""An experiment's own ``compute``, run around its one ``train_by_size`` call.

What: ``capture_call(config)`` runs ``config.compute`` up to its call of the engine's
``train_by_size`` and returns that call's arguments (``EnsembleCall``: tasks, students, training
config, data seeds) without training anything; ``ensemble_groups(call, device)`` says how the
engine splits that call into ensembles on a device; ``answering(config, result)`` lets the rest
of ``compute`` run with the call answered by ``result`` (the sweep's ensembles, combined)
instead of training.

Why: ``compute`` is the one place where an entry's members, seeds, evaluation, tensors and
metrics are made. The sweep runs it unchanged on both sides (a worker to learn which members
its ensemble trains, the client to evaluate them and fill the entry), not a copy that could
drift from it. The name ``train_by_size`` is replaced in the experiment's module only inside
these functions, under a lock (one replacement at a time in a process), and always restored.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from ..engine import TrainConfig, TrainResult, plan_ensembles, train_by_size
from ..models.gated_rnn import GatedRNN

__all__ = ["EnsembleCall", "answering", "capture_call", "ensemble_groups", "forbidding"]

_LOCK = threading.RLock()


@dataclass(frozen=True)
class EnsembleCall:
    """The arguments of an experiment's ``train_by_size`` call, member by member."""

    tasks: tuple[Any, ...]
    students: tuple[GatedRNN, ...]
    train: TrainConfig
    data_seeds: tuple[int, ...]
    desc: str


class _Captured(BaseException):
    """Stops ``compute`` at its ``train_by_size`` call (a BaseException: no ``except Exception``
    inside ``compute`` can swallow it)."""

    def __init__(self, call: EnsembleCall) -> None:
        super().__init__("captured")
        self.call = call


def _module_of(config: Any):
    return importlib.import_module(type(config).__module__)


@contextmanager
def _replaced(module: Any, names: tuple[str, ...], fn: Callable) -> Iterator[None]:
    """``module.<name> = fn`` for each of ``names`` that the module has, restored on exit."""
    with _LOCK:
        saved = {n: getattr(module, n) for n in names if hasattr(module, n)}
        if not saved:
            raise TypeError(f"{module.__name__} has none of {', '.join(names)}")
        try:
            for n in saved:
                setattr(module, n, fn)
            yield
        finally:
            for n, f in saved.items():
                setattr(module, n, f)


def _bind(args: tuple, kwargs: dict) -> EnsembleCall:
    bound = inspect.signature(train_by_size).bind(*args, **kwargs)
    bound.apply_defaults()
    a = bound.arguments
    if a["groups"] is not None or a["device"] is not None:
        raise TypeError("the sweep splits train_by_size calls without groups= or device= only")
    return EnsembleCall(
        tuple(a["tasks"]), tuple(a["students"]), a["config"], tuple(a["data_seeds"]), a["desc"]
    )


def capture_call(config: Any) -> EnsembleCall:
    """The ``train_by_size`` call of ``config.compute`` (no training happens)."""

    def capture(*args: Any, **kwargs: Any) -> TrainResult:
        raise _Captured(_bind(args, kwargs))

    with _replaced(_module_of(config), ("train_by_size",), capture):
        try:
            config.compute(checkpoint=None, progress=False)
        except _Captured as got:
            return got.call
    raise TypeError(f"{type(config).__name__}.compute did not call train_by_size")


def ensemble_groups(call: EnsembleCall, device: str) -> list[list[int]]:
    """The member indices of each ensemble ``train_by_size`` trains for ``call`` on ``device``
    (as it decides: one ensemble off the CPU, else ``plan_ensembles`` with its defaults)."""
    if torch.device(device).type != "cpu":
        return [list(range(len(call.students)))]
    s0 = call.students[0]
    sizes = [(s.n, s.m) for s in call.students]
    return plan_ensembles(sizes, s0.d, s0.d_out, call.tasks[0].T, call.train.batch_size, s0.side)


@contextmanager
def answering(config: Any, result: TrainResult) -> Iterator[None]:
    """Inside: ``config.compute``'s ``train_by_size`` call returns ``result`` (checked to have
    one member per student) instead of training."""

    def answer(*args: Any, **kwargs: Any) -> TrainResult:
        call = _bind(args, kwargs)
        E = result.losses.shape[1]
        if len(call.students) != E:
            raise ValueError(f"{len(call.students)} members in compute, {E} in the sweep")
        return result

    with _replaced(_module_of(config), ("train_by_size",), answer):
        yield


@contextmanager
def forbidding(config: Any, names: tuple[str, ...] = ("train", "train_by_size")) -> Iterator[None]:
    """Inside: a call of the training functions ``names`` of ``config``'s module is an error
    (the client assembles an entry from finished jobs; it never trains)."""

    def refuse(*args: Any, **kwargs: Any) -> TrainResult:
        raise RuntimeError(
            f"{type(config).__name__}.compute tried to train while the sweep assembled its "
            "entry: a job's output is missing"
        )

    with _replaced(_module_of(config), names, refuse):
        yield
