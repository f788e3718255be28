"""What an experiment's job would train, without training it: its first ``train`` call, stopped.

Inside ``probing()``, every binding of ``engine.train`` in the loaded modules (``engine.train``,
``engine.loop.train``, an experiment's ``from ..engine import train``, a caller's own import)
is replaced by a stand-in that checks the tasks as ``train`` does (``tasks.protocol.check_task``)
and raises ``TrainCall`` carrying the arguments, before any set-up or step; on leaving, every
binding is restored. The engine has no hook for it: the lab reads a job's training run this way
(``device_time.job_run``) to count the kernels and FLOPs of its step.

``TrainCall`` derives from ``BaseException``, so that an experiment's ``except Exception``
(a learning-rate search that scores a failed rate) does not swallow it.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from gated_attention.engine import loop
from gated_attention.tasks.protocol import check_task

__all__ = ["TrainCall", "probing"]

#: the arguments a stopped call carries (those that decide its step)
KEPT = ("tasks", "params", "config", "data_seeds", "masks", "no_decay", "forward", "member_lrs")


class TrainCall(BaseException):
    """The arguments of the ``train`` call a probe stopped (``arguments``: a dict by name)."""

    def __init__(self, arguments: dict) -> None:
        super().__init__("train was called inside probing()")
        self.arguments = arguments


@contextmanager
def probing() -> Iterator[None]:
    """Within it, ``train`` (wherever it was imported) raises ``TrainCall`` instead of training."""
    original = loop.train
    signature = inspect.signature(original)

    def stand_in(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = {k: bound.arguments[k] for k in KEPT}
        arguments["tasks"] = [check_task(t) for t in arguments["tasks"]]
        raise TrainCall(arguments)

    patched = []
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", {})
        for name, value in list(names.items()):
            if value is original:
                setattr(module, name, stand_in)
                patched.append((module, name))
    try:
        yield
    finally:
        for module, name in patched:
            setattr(module, name, original)
