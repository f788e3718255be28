"""Who trained a job: the worker's host, device and code hash, and the check that its code is
the client's.

What: ``check_code(job)`` raises ``CodeHashMismatchError`` (naming both hashes and the worker) when
the worker's ``code_hash()`` differs from the one the client sent with the job;
``describe_worker(device)`` is what a job's output records about where it ran.

Why: an entry is keyed by the hash of the code that computed it. A worker running other code
(another commit, uncommitted edits, an old install) would put its numbers under the client's
key, so it must refuse before training. The errors of a sweep are ``SweepError``s; the
mismatch is one, a dedicated type so that the client stops at once instead of trying again.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import torch

from ..engine import hardware, resolve_device
from ..experiments.cache import code_hash

__all__ = ["CodeHashMismatchError", "SweepError", "check_code", "describe_worker", "worker_address"]


class SweepError(RuntimeError):
    """A sweep cannot go on (the message says why and what to do)."""


class CodeHashMismatchError(SweepError):
    """A worker's code is not the client's: its ``code_hash()`` differs."""

    def __init__(self, worker_hash: str, client_hash: str, where: str, job: str) -> None:
        self.worker_hash, self.client_hash, self.where, self.job = (
            worker_hash,
            client_hash,
            where,
            job,
        )
        super().__init__(
            f"worker {where} runs other code than the client: its code hash is {worker_hash}, "
            f"the client's is {client_hash}. Job {job!r} was not trained. Every worker must "
            "import the same gated_attention source as the client (same commit, same "
            "uncommitted edits); reinstall it there, or restart the workers after a change."
        )

    def __reduce__(self) -> tuple:  # rebuilt from its fields when it crosses the network
        return type(self), (self.worker_hash, self.client_hash, self.where, self.job)


def worker_address() -> str | None:
    """The address of the worker running this code, or None outside a worker."""
    from distributed import get_worker

    try:
        return get_worker().address
    except ValueError:
        return None


def check_code(expected: str, job_label: str, config: Any = None) -> str:
    """This worker's ``code_hash(config=config)`` (the source the job's experiment runs),
    after checking it equals ``expected`` (the client's)."""
    mine = code_hash(config=config)
    if mine != expected:
        where = f"{socket.gethostname()} ({worker_address() or 'this process'})"
        raise CodeHashMismatchError(mine, expected, where, job_label)
    return mine


def describe_worker(device: str, code: str | None = None) -> dict[str, Any]:
    """Where a job ran: host, worker address, process id, device (with the GPU's name), code
    hash (``code``, checked before; default ``code_hash()``), the hardware of
    ``engine.hardware`` and the time it finished (UTC)."""
    dev = resolve_device(device)
    out = {
        "host": socket.gethostname(),
        "worker": worker_address(),
        "pid": os.getpid(),
        "device": str(dev),
        "code_hash": code_hash() if code is None else code,
        "hardware": hardware(dev),
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if dev.type == "cuda":
        out["device_name"] = torch.cuda.get_device_name(dev)
    return out
