"""Drawing training data: a chunk of steps per call, one generator per stream, written straight
into the fast path's neuron-major layout; members of a paired sweep share a stream."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import torch

from ..tasks.protocol import Task


def sample_chunk(
    tasks: Sequence[Task], generators: Sequence[torch.Generator], steps: int, batch_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Data for ``steps`` training steps of every member, one ``sample`` call per member.

    Returns x (steps, E, B, T, d) and y (steps, E, B, T, d_out), float64.
    """
    xs, ys = [], []
    for task, g in zip(tasks, generators, strict=True):
        x, y = task.sample(steps * batch_size, g)
        xs.append(x.reshape(steps, batch_size, *x.shape[1:]))
        ys.append(y.reshape(steps, batch_size, *y.shape[1:]))
    return torch.stack(xs, dim=1), torch.stack(ys, dim=1)


def sample_chunk_neuron_major(
    tasks: Sequence[Task],
    generators: Sequence[torch.Generator],
    steps: int,
    batch_size: int,
    dtype: torch.dtype,
    out_steps: torch.Tensor | None = None,
    pool: ThreadPoolExecutor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``sample_chunk`` written straight into the fast path's layout, one copy per member.

    Returns X (steps, E, d+1, T*B) with x~ = [x; 1] and Y (steps, E, d_out, T'*B) at the steps
    ``out_steps`` (None: all), both in ``dtype``, column t*B + b: the same numbers as
    ``inputs_neuron_major(x.to(dtype))`` and ``targets_neuron_major(y, out_steps).to(dtype)``
    of ``sample_chunk``'s x, y (tested), without the stacked float64 copies. ``pool``: draw
    the members in these threads (the same numbers: each member has its own generator).
    """
    t0, E, B = tasks[0], len(tasks), batch_size
    T, d, d_out = t0.T, t0.d, t0.d_out
    T_out = T if out_steps is None else len(out_steps)
    if len(generators) != E:
        raise ValueError(f"{len(generators)} generators for {E} tasks")
    X = torch.empty(steps, E, d + 1, T * B, dtype=dtype)
    X[:, :, d] = 1.0
    Y = torch.empty(steps, E, d_out, T_out * B, dtype=dtype)

    def fill(e: int) -> None:  # member e's columns; members write disjoint memory
        x, y = tasks[e].sample(steps * B, generators[e])  # (steps*B, T, d), (steps*B, T, d_out)
        if out_steps is not None:
            y = y[:, out_steps]
        X[:, e, :d].view(steps, d, T, B).copy_(x.view(steps, B, T, d).permute(0, 3, 2, 1))
        Y[:, e].view(steps, d_out, T_out, B).copy_(
            y.reshape(steps, B, T_out, d_out).permute(0, 3, 2, 1)
        )

    if pool is None or E == 1:
        for e in range(E):
            fill(e)
    else:  # each member draws from its own generator: the threads change no number
        list(pool.map(fill, range(E)))
    return X, Y


def data_streams(tasks: Sequence[Task], data_seeds: Sequence[int]):
    """The data streams of an ensemble: members with the same task and data seed (a paired
    sweep: sizes sharing a seed) draw the same stream, drawn once and shared.

    Returns (streams, stream_tasks, generators): streams (E,) member -> its stream, and one
    task and one generator per stream."""
    keys = [(id(t), int(s)) for t, s in zip(tasks, data_seeds, strict=True)]
    unique = list(dict.fromkeys(keys))
    streams = torch.tensor([unique.index(k) for k in keys])
    stream_tasks = [tasks[keys.index(k)] for k in unique]
    return streams, stream_tasks, [torch.Generator().manual_seed(k[1]) for k in unique]
