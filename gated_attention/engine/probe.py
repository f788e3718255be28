"""What an experiment would train, without training it.

Inside ``probing()``, ``train`` checks its arguments and then, before any set-up or step,
raises ``TrainCall`` carrying them: the tasks, the parameters, the config, the seeds, the masks,
the weights without decay and the forward. Code that trains through the engine (an
experiment's job) is run as it is, and stops at its first training run, which the caller then
studies: ``tools.gpu_plan`` counts the kernels and FLOPs of each job's step from it.

``TrainCall`` derives from ``BaseException``, so that an experiment's ``except Exception``
(a learning-rate search that scores a failed rate) does not swallow it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["TrainCall", "probing", "stop_if_probing"]

_PROBING: ContextVar[bool] = ContextVar("probing", default=False)


class TrainCall(BaseException):
    """The arguments of the ``train`` call a probe stopped (``arguments``: a dict by name)."""

    def __init__(self, arguments: dict) -> None:
        super().__init__("train was called inside probing()")
        self.arguments = arguments


@contextmanager
def probing() -> Iterator[None]:
    """Within it, ``train`` raises ``TrainCall`` instead of training."""
    token = _PROBING.set(True)
    try:
        yield
    finally:
        _PROBING.reset(token)


def stop_if_probing(**arguments) -> None:
    """Called by ``train`` with its checked arguments: raises ``TrainCall`` inside
    ``probing()``, else nothing."""
    if _PROBING.get():
        raise TrainCall(arguments)
