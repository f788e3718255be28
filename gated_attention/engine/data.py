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
    """Data for ``steps`` training steps of every member, one ``sample`` call per member:
    x (steps, E, B, T, d) and y (steps, E, B, T, d_out), float64."""
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
    batch_labels: bool | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``sample_chunk`` written straight into the fast path's layout (the same numbers, tested):
    X (steps, E, d+1, T*B) with x~ = [x; 1], Y (steps, E, d_out, T'*B) at ``out_steps`` (None:
    all), column t*B + b, in ``dtype``. ``pool``: draw the members in these threads.
    ``batch_labels``: all labels from one batched ``labels_of_many`` (equal up to rounding);
    None: only off the CPU, so the CPU's data stay those of member-by-member drawing.
    """
    t0, E, B = tasks[0], len(tasks), batch_size
    T, d, d_out = t0.T, t0.d, t0.d_out
    T_out = T if out_steps is None else len(out_steps)
    if len(generators) != E:
        raise ValueError(f"{len(generators)} generators for {E} tasks")
    dev = generators[0].device  # where the tasks draw (``data_on_device``), else the CPU
    X = torch.empty(steps, E, d + 1, T * B, dtype=dtype, device=dev)
    X[:, :, d] = 1.0
    Y = torch.empty(steps, E, d_out, T_out * B, dtype=dtype, device=dev)

    if _labels_batched(tasks, dev) if batch_labels is None else batch_labels:
        pairs = zip(tasks, generators, strict=True)
        x = torch.stack([t.draw_inputs(steps * B, g) for t, g in pairs])
        y = type(t0).labels_of_many(tasks, x)  # (E, steps*B, T, d_out)
        y = y if out_steps is None else y[:, :, out_steps]
        X[:, :, :d].view(steps, E, d, T, B).copy_(x.view(E, steps, B, T, d).permute(1, 0, 4, 3, 2))
        Y.view(steps, E, d_out, T_out, B).copy_(
            y.reshape(E, steps, B, T_out, d_out).permute(1, 0, 4, 3, 2)
        )
        return X, Y

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


def _labels_batched(tasks: Sequence[Task], dev: torch.device) -> bool:
    """``batch_labels``'s default: off the CPU, for tasks of one kind with ``labels_of_many``."""
    kind = type(tasks[0])
    return (
        dev.type != "cpu"
        and hasattr(kind, "labels_of_many")
        and all(type(t) is kind for t in tasks)
    )


def data_streams(
    tasks: Sequence[Task], data_seeds: Sequence[int], device: torch.device | None = None
):
    """Members with the same task and data seed (a paired sweep) share a stream: returns streams
    (E,) member -> stream, and a task and a generator per stream on ``device`` (None: the CPU)."""
    keys = [(id(t), int(s)) for t, s in zip(tasks, data_seeds, strict=True)]
    unique = list(dict.fromkeys(keys))
    streams = torch.tensor([unique.index(k) for k in keys])
    stream_tasks = [tasks[keys.index(k)] for k in unique]
    dev = torch.device("cpu") if device is None else torch.device(device)
    return streams, stream_tasks, [torch.Generator(dev).manual_seed(k[1]) for k in unique]


def data_on_device(tasks: Sequence[Task], device: torch.device, asked: bool | None) -> bool:
    """Whether a run draws its data on ``device``: ``asked`` (True: a ValueError unless the tasks
    can, ``draws_on_device``), else (None) on a GPU whenever the tasks can."""
    can = all(getattr(t, "draws_on_device", False) for t in tasks)
    if asked and not can:
        names = sorted(
            {type(t).__name__ for t in tasks if not getattr(t, "draws_on_device", False)}
        )
        raise ValueError(f"data_on_device=True, but {', '.join(names)} draws on the host only")
    return can and device.type != "cpu" if asked is None else bool(asked)


class DataFeed:
    """A run's data, a chunk of steps at a time (``next``), in the layout of the run's path,
    on the device, each member reading its stream. With ``background`` the next chunk is drawn
    in threads (``pending``: its future, or None) while the device trains: the same numbers.
    """

    def __init__(
        self,
        stream_tasks: Sequence[Task],
        generators: Sequence[torch.Generator],
        streams: torch.Tensor,
        *,
        members: int,
        batch_size: int,
        dtype: torch.dtype,
        out_steps: torch.Tensor | None,
        packed: bool,
        cut_targets: bool,
        device: torch.device,
        background: bool,
    ):
        self.tasks, self.gens = stream_tasks, generators
        self.E, self.B, self.dtype, self.out_steps = members, batch_size, dtype, out_steps
        self.packed, self.cut, self.dev = packed, cut_targets, device
        many = background and len(generators) > 1
        self.pool = ThreadPoolExecutor(len(generators)) if many else None
        self.prefetch = ThreadPoolExecutor(1) if background else None
        self.streams_dev = streams.to(device)
        self.pending = None

    def draw(self, k: int) -> tuple[torch.Tensor, torch.Tensor, list]:
        """The next k steps' data and every generator's state right after drawing them."""
        if self.packed:  # (k, S, d+1, T*B), (k, S, d_out, T'*B), neuron-major, in dtype
            X, Y = sample_chunk_neuron_major(
                self.tasks, self.gens, k, self.B, self.dtype, self.out_steps, self.pool
            )
        else:  # (k, S, B, T, d), (k, S, B, T, d_out)
            X, Y = sample_chunk(self.tasks, self.gens, k, self.B)
            X = X.to(self.dtype)
            if self.cut and self.out_steps is not None:
                Y = Y[..., self.out_steps, :]
            Y = Y.to(self.dtype)
        states = [g.get_state() for g in self.gens]
        if self.dev.type == "cuda" and X.device.type == "cpu":  # page-locked: the copy to the
            X, Y = X.pin_memory(), Y.pin_memory()  # GPU does not stop the host
        return X, Y, states

    def next(self, step: int, steps: int, chunk: int):
        """(X, Y, states, k): steps step+1 .. step+k on the device, (k, E, ...), and ``draw``'s
        states; the next chunk prefetched."""
        k = min(chunk, steps - step)
        X, Y, states = self.pending.result() if self.pending is not None else self.draw(k)
        self.pending = None
        if self.prefetch is not None and step + k < steps:
            self.pending = self.prefetch.submit(self.draw, min(chunk, steps - step - k))
        # each stream crosses to the device once (none on the CPU or drawn there), then each
        # member sharing a stream reads its own
        X, Y = X.to(self.dev, non_blocking=True), Y.to(self.dev, non_blocking=True)
        if len(self.gens) < self.E:
            X, Y = X[:, self.streams_dev], Y[:, self.streams_dev]
        return X, Y, states, k

    def close(self) -> None:
        for ex in (self.prefetch, self.pool):
            if ex is not None:
                ex.shutdown(wait=True, cancel_futures=True)
