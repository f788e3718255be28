"""The training engine: AdamW + cosine annealing for ensembles of gated RNNs (Sec. 4.1).

Glossary (code name -> paper symbol / meaning -> shape):
    params       the student's parameters (W_in1, W_in2, nu, W_out1, W_out2, D or W_side), each
                 with a leading ensemble dim E: E independent runs trained in one computation
    masks        0/1 tensors, same shapes as params: a member with n_e < n hidden neurons (or
                 m_e < m output-gating neurons) is the larger network with the extra neurons
                 masked; masked weights are exactly zero and get exactly zero gradient
    lr, eta_min  AdamW's learning rate, annealed by a cosine from lr to eta_min over ``steps``
    weight_decay AdamW's decoupled weight decay, on every parameter except nu (Sec. 4.1)
    chunk_steps  data for this many steps is drawn at once (one generator call per member)
    log_every    the loss curve keeps the mean training loss of each window of this many steps

Why an ensemble equals separate runs: the loss is the sum of the members' losses, so each
member's gradient is its own loss's gradient; AdamW is elementwise; nothing couples the members
(no gradient clipping across them). Each member draws its data from its own generator.
``tests/test_training.py`` checks that an ensemble and E separate runs end with the same
parameters (float64, 1e-10), and that an interrupted run resumed from its checkpoint ends where an
uninterrupted one does.

Two modes of the same training step (same data, same numbers up to rounding; tested):
    "fast"       ``fast_path.fused_loss`` on packed weights and neuron-major data (one GEMM
                 per gating pair, decay-matrix scan, output only at the loss's time steps, a
                 hand-written backward), the fused AdamW kernel, the loss read back once per
                 log window; masks applied once (masked entries then stay exactly zero).
    "reference"  the readable definition: ``gated_rnn_forward(mode="reference")`` (a loop over
                 t), ``masked_mse``, a plain per-parameter AdamW, the loss read back every step.
A model other than Eq. (2) can be trained by passing ``forward`` (then both modes run it as is).

Size sweeps: in one ensemble a smaller member costs what the largest costs, so
``train_by_size`` trains a sweep as a few ensembles of similar sizes, one after another (the
split of ``plan_ensembles``, which minimises a cost model: ``forward_macs`` at each ensemble's
largest size plus ``ENSEMBLE_OVERHEAD_MACS`` per ensemble). On a GPU a sweep is one ensemble.

On a GPU (``device``, or $GATED_ATTENTION_DEVICE): the fast step is recorded once as a CUDA
graph and replayed (``_GraphedStep``), and the data, drawn on the CPU as everywhere (the same
numbers), are drawn in background threads while the GPU trains (``_draw_in_background``).
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from .fast_path import (
    forward_packed,
    fused_loss,
    gated_rnn_fast,
    pack_params,
    unpack_params,
)
from .gated_rnn import GatedRNN, gated_rnn_forward
from .tasks import Task, check_task, masked_mse

__all__ = [
    "TrainConfig",
    "TrainResult",
    "MODES",
    "train",
    "train_by_size",
    "size_groups",
    "plan_ensembles",
    "forward_macs",
    "ENSEMBLE_OVERHEAD_MACS",
    "gated_rnn_fast",
    "stack_students",
    "unstack_students",
    "sample_chunk",
    "sample_chunk_neuron_major",
    "cosine_lr",
    "flush_denormals",
    "resolve_device",
    "DEVICE_ENV",
]

MODES = ("fast", "reference")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


#: the environment variable that names the device ``train`` runs on (default: the CPU)
DEVICE_ENV = "GATED_ATTENTION_DEVICE"


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """The device to train on: ``device``, else $GATED_ATTENTION_DEVICE, else "cpu".

    The data are drawn on the CPU (the tasks' generators) and moved chunk by chunk; results come
    back to the CPU. A device that does not exist here is an error that names it.
    """
    name = device if device is not None else os.environ.get(DEVICE_ENV, "cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"unknown device {name!r} (from {DEVICE_ENV} or device=): {err}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested, but torch sees no CUDA device here")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device {name!r}: only 'cpu' and 'cuda' are supported")
    return dev


def flush_denormals() -> bool:
    """Flush subnormal floats to zero (``torch.set_flush_denormal(True)``); True if supported.

    Under weight decay the weights of dead neurons shrink geometrically, and products of them
    fall below the smallest normal float32 (1.2e-38). x86 CPUs compute with such subnormal
    numbers up to a hundred times slower: on the 2-core machine this project is measured on,
    one training step of a trained d = 4, n = m = 48 student took 11 ms with subnormals and
    1.7 ms without. Flushing changes only values below 1.2e-38 (2.2e-308 in float64), far
    below anything this project reports. The setting is per thread and worker threads copy it
    when they start, so ``gated_attention`` calls this on import (before torch starts its
    thread pool, in a fresh process); ``train`` calls it again for its own thread.
    """
    return bool(torch.set_flush_denormal(True))


@dataclass(frozen=True)
class TrainConfig:
    """Optimiser and engine settings (the paper gives AdamW, cosine annealing, batch 64, 1M steps).

    Defaults are our choices where the paper is silent: lr 1e-3 annealed to eta_min 1e-6, weight
    decay 1e-4 (on all parameters but nu), Adam's default betas and eps, no warm-up, no
    gradient clipping (clipping by a global norm would couple ensemble members).
    """

    steps: int
    batch_size: int = 64
    lr: float = 1e-3
    eta_min: float = 1e-6
    weight_decay: float = 1e-4
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    warmup_steps: int = 0
    log_every: int = 100
    chunk_steps: int = 50
    checkpoint_every: int = 0  # 0: never; else a multiple of chunk_steps
    mode: str = "fast"
    dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "log_every", "chunk_steps"):
            val = getattr(self, name)
            if not isinstance(val, int) or val < 1:
                raise ValueError(f"TrainConfig.{name} must be a positive integer, got {val!r}")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; expected one of {', '.join(MODES)}")
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; expected one of {', '.join(DTYPES)}")
        if self.checkpoint_every < 0 or self.checkpoint_every % self.chunk_steps:
            raise ValueError(
                f"checkpoint_every ({self.checkpoint_every}) must be 0 or a multiple of "
                f"chunk_steps ({self.chunk_steps}): checkpoints fall between data chunks"
            )
        if not 0 <= self.warmup_steps < self.steps:
            raise ValueError(f"warmup_steps must lie in [0, steps), got {self.warmup_steps}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]


@dataclass
class TrainResult:
    """What ``train`` returns. E = number of ensemble members, K = number of logged windows.

    params       final parameters, dict of (E, ...) float tensors (masked entries are zero)
    loss_steps   (K,) step count at the end of each logged window
    losses       (K, E) mean training loss of each member over each window
    final_loss   (E,) mean training loss over the last window
    wall_time    seconds spent in this call (a resumed run counts only its own part)
    resumed_from step the run resumed from (0 for a fresh start)
    """

    params: dict[str, torch.Tensor]
    loss_steps: torch.Tensor
    losses: torch.Tensor
    wall_time: float
    resumed_from: int = 0

    @property
    def final_loss(self) -> torch.Tensor:
        return self.losses[-1]


def cosine_lr(step: int, config: TrainConfig) -> float:
    """The learning rate at ``step``: linear warm-up, then cosine from lr to eta_min."""
    c = config
    if step < c.warmup_steps:
        return c.lr * (step + 1) / c.warmup_steps
    progress = (step - c.warmup_steps) / max(1, c.steps - c.warmup_steps)
    return c.eta_min + 0.5 * (c.lr - c.eta_min) * (1.0 + math.cos(math.pi * min(1.0, progress)))


def stack_students(students: Sequence[GatedRNN]) -> tuple[dict, dict]:
    """Stack GatedRNNs of equal d, d_out and gating kind (n, m may differ) into an ensemble.

    Returns ``(params, masks)``: dicts of (E, ...) float64 tensors; a member with fewer neurons
    sits in the top-left block, zero-padded, and its mask is 1 exactly on its own entries.
    """
    if not students:
        raise ValueError("stack_students needs at least one GatedRNN")
    first = students[0]
    for s in students:
        if not isinstance(s, GatedRNN):
            raise TypeError(f"expected GatedRNN members, got {type(s).__name__}")
        if (s.d, s.d_out, s.side) != (first.d, first.d_out, first.side):
            raise ValueError(
                "ensemble members must share d, d_out and the gating kind; got "
                f"{(first.d, first.d_out, first.side)} and {(s.d, s.d_out, s.side)}"
            )
    n = max(s.n for s in students)
    m = max(s.m for s in students)
    params, masks = {}, {}
    for name, _ in first.named_parameters():
        full = _full_shape(name, first, n, m)
        P = torch.zeros(len(students), *full, dtype=torch.float64)
        Mk = torch.zeros_like(P)
        for e, s in enumerate(students):
            w = getattr(s, name).detach().to(torch.float64)
            idx = (e, *(slice(0, k) for k in w.shape))
            P[idx] = w
            Mk[idx] = 1.0
        params[name], masks[name] = P, Mk
    return params, masks


def _full_shape(name: str, s: GatedRNN, n: int, m: int) -> tuple[int, ...]:
    d1 = s.d + 1
    return {
        "W_in1": (n, d1),
        "W_in2": (n, d1),
        "W_side": (n, d1),
        "nu": (n,),
        "W_out1": (m, n),
        "W_out2": (m, n),
        "D": (s.d_out, n if s.side else m),
    }[name]


def unstack_students(
    params: dict[str, torch.Tensor],
    sizes: Sequence[tuple[int, int]],
    dtype: torch.dtype = torch.float64,
) -> list[GatedRNN]:
    """The inverse of ``stack_students``: member e becomes a GatedRNN with (n, m) = sizes[e]."""
    side = "W_side" in params
    d = params["W_in1"].shape[-1] - 1
    d_out = params["D"].shape[-2]
    if len(sizes) != params["nu"].shape[0]:
        raise ValueError(f"{len(sizes)} sizes for an ensemble of {params['nu'].shape[0]}")
    out = []
    for e, (n, m) in enumerate(sizes):
        rnn = GatedRNN(d, n, 0 if side else m, d_out, side=side, dtype=dtype)
        with torch.no_grad():
            for name, p in rnn.named_parameters():
                src = params[name][e][tuple(slice(0, k) for k in p.shape)]
                p.copy_(src.to(dtype))
        out.append(rnn)
    return out


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


def _draw_in_background(dev: torch.device) -> bool:
    """Whether ``train`` draws data in background threads: off the CPU only. On it the training
    itself keeps the cores busy: forced on a 2-core CPU, background drawing made a step 1.6 to
    2.6 times slower (E = 1, n = 100, T = 32: 3.1 -> 6.1 ms; E = 16, n = 28: 9.9 -> 16.2 ms;
    E = 3, n = 48, T = 8: 1.5 -> 3.7 ms)."""
    return dev.type != "cpu"


class _GraphedStep:
    """The fast step's loss, its gradients and the loss window, on fixed input buffers.

    Called with one step's data (x, y), it copies them into the buffers X, Y, computes
    ``loss_fn(X, Y)`` (E,), its backward (into the parameters' .grad) and adds the loss into
    ``window``; the caller then runs the optimiser. Eagerly, gradients are cleared first (as
    ``zero_grad`` after the last step would). With ``capture`` (a CUDA device), the first WARMUP
    steps run eagerly on a side stream (the warm-up torch's CUDA-graph notes ask for; they are
    real training steps), the next is recorded once as a CUDA graph and every step from then on
    replays it: one launch for the ~40 small kernels of a step, whose launches otherwise cost
    more than the kernels. A replay writes the same gradient tensors each time, so they are
    never cleared in between. ``before_capture``: a pending future (the prefetch of the next
    chunk) finished first, so no other thread of this run talks to the device during the
    recording.
    """

    WARMUP = 3

    def __init__(self, loss_fn, opt: torch.optim.Optimizer, window: torch.Tensor, capture: bool):
        self.loss_fn, self.opt, self.window, self.capture = loss_fn, opt, window, capture
        self.X = self.Y = None
        self.graph = None
        self.eager_steps = 0
        self.side = torch.cuda.Stream(window.device) if capture else None

    def _body(self) -> None:
        loss = self.loss_fn(self.X, self.Y)
        loss.sum().backward()  # the members' gradients stay separate
        self.window += loss.detach()

    def __call__(self, x: torch.Tensor, y: torch.Tensor, before_capture: Future | None = None):
        if self.X is None:
            self.X, self.Y = torch.empty_like(x), torch.empty_like(y)
        self.X.copy_(x)
        self.Y.copy_(y)
        if self.graph is not None:
            self.graph.replay()
            return
        if not self.capture:
            self.opt.zero_grad(set_to_none=True)
            self._body()
            return
        current = torch.cuda.current_stream(self.window.device)
        if self.eager_steps < self.WARMUP:
            self.eager_steps += 1
            self.side.wait_stream(current)
            with torch.cuda.stream(self.side):
                self.opt.zero_grad(set_to_none=True)
                self._body()
            current.wait_stream(self.side)
            return
        if before_capture is not None:
            before_capture.result()
        self.opt.zero_grad(set_to_none=True)  # the recorded backward allocates the gradients
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            self._body()
        self.graph = graph
        graph.replay()  # recording ran nothing: this is the step itself


Forward = Callable[[torch.Tensor, dict], torch.Tensor]


def train(
    tasks: Sequence[Task],
    params: dict[str, torch.Tensor],
    config: TrainConfig,
    *,
    data_seeds: Sequence[int],
    masks: dict[str, torch.Tensor] | None = None,
    no_decay: Sequence[str] = ("nu",),
    forward: Forward | None = None,
    checkpoint: str | os.PathLike | None = None,
    progress: bool = True,
    desc: str = "training",
    device: str | torch.device | None = None,
    cuda_graph: bool | None = None,
) -> TrainResult:
    """Train an ensemble of E students, member e on ``tasks[e]`` with data from ``data_seeds[e]``.

    Args:
        tasks: E tasks (same d, d_out, T, loss_mask and loss_scale; teachers may differ).
        params: dict of (E, ...) tensors (e.g. from ``stack_students``); copied, not modified.
        config: the optimiser and engine settings.
        data_seeds: E seeds; member e's data comes from ``torch.Generator().manual_seed(seed)``.
        masks: optional 0/1 tensors (as from ``stack_students``): the model sees params * masks.
        no_decay: parameter names without weight decay (nu, Sec. 4.1).
        forward: a model ``forward(x (E, B, T, d), params) -> y (E, B, T, d_out)``; None is the
            gated RNN of Eq. (2) (``gated_rnn_fast``, or the reference loop in mode "reference").
        checkpoint: a file path: the run saves its state there every ``config.checkpoint_every``
            steps and, if the file exists, resumes from it. The caller deletes it when done.
        progress: show a tqdm bar (plain tqdm; TQDM_DISABLE=1 also turns it off).
        device: where the computation runs (``resolve_device``: default $GATED_ATTENTION_DEVICE,
            else the CPU); the returned parameters and losses are CPU tensors.
        cuda_graph: run the fast step (output gating) as a captured CUDA graph (``_GraphedStep``;
            None: on a CUDA device, which is where it exists).
    """
    tasks = [check_task(t) for t in tasks]
    flush_denormals()  # see there: subnormal weights of dead neurons slow a step ~6x
    dev = resolve_device(device)
    E = len(tasks)
    _check_ensemble(tasks, params, data_seeds, masks)
    c = config
    dtype = c.torch_dtype
    t0 = time.perf_counter()
    if masks is not None and all(bool(v.all()) for v in masks.values()):
        masks = None  # nothing is masked: skip the multiplications
    # packed: the fused fast path of Eq. (2) (W_in1, W_in2 and W_out1, W_out2 stored as one
    # tensor each; AdamW is elementwise, so packing changes no number)
    packed = c.mode == "fast" and forward is None
    pack = pack_params if packed else dict
    P = {
        k: v.detach().to(dtype=dtype, device=dev).clone().requires_grad_(True)
        for k, v in pack(params).items()
    }
    Mk = None
    if masks is not None:
        Mk = {k: v.to(dtype=dtype, device=dev) for k, v in pack(masks).items()}
    if Mk is not None:
        with torch.no_grad():
            for k in P:
                P[k].mul_(Mk[k])
    fast = c.mode == "fast"
    opt, sched = _optimiser(P, c, no_decay)
    streams, stream_tasks, gens = _streams(tasks, data_seeds)
    mask_t = tasks[0].loss_mask
    out_steps = None if mask_t is None else torch.nonzero(mask_t).flatten()  # for the data (CPU)
    out_steps_dev = None if out_steps is None else out_steps.to(dev)  # for the model
    mask_dev = None if mask_t is None else mask_t.to(dev)
    scale, T = float(tasks[0].loss_scale), tasks[0].T

    step, loss_steps, losses = 0, [], []
    window = torch.zeros(E, dtype=dtype, device=dev)  # the summed loss of the current log window
    path = None if checkpoint is None else Path(checkpoint)
    state = _read_checkpoint(path)
    if state is not None:
        step, loss_steps, losses, window = _restore(state, path, P, opt, sched, gens, streams)
        losses = [w.to(dev) for w in losses]
        window = window.to(dtype=dtype, device=dev)
    resumed_from = step

    # fast, output gating: one fused node (fast_path.FusedLoss). Masked entries start at zero and
    # stay exactly zero without re-masking: a zero row/column of a padded neuron makes every
    # gradient that touches it an exact zero, and AdamW moves a zero weight with a zero gradient
    # by exactly zero (tests/test_training.py puts garbage in the padding to check it).
    fused_path = packed and "W_out" in P

    def step_loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The (E,) losses of one step; x, y as prepared for the mode (see below)."""
        if fused_path:
            return fused_loss(x, P, y, T, out_steps_dev, scale)
        p = P if Mk is None else {k: P[k] * Mk[k] for k in P}
        if packed:  # x (E, d+1, T*B), y (E, d_out, T'*B): neuron-major
            y_hat = forward_packed(x, p, T, out_steps_dev)
            return scale * (y_hat - y).square().mean(dim=(1, 2))
        if forward is not None:  # y already at the loss's steps
            y_hat = forward(x, p)
            y_hat = y_hat if out_steps is None else y_hat[:, :, out_steps_dev]
            return scale * (y_hat - y).square().mean(dim=(-3, -2, -1))
        y_hat = gated_rnn_forward(x, p, mode="reference")  # the readable definition
        return masked_mse(y_hat, y, mask_dev, scale)

    on_cpu = dev.type == "cpu"
    # off the CPU the data are drawn while the device trains: the next chunk in a background
    # thread, the streams of a chunk in threads of their own (the same numbers: each stream has
    # its own generator, drawn in the same order)
    background = _draw_in_background(dev)
    pool = ThreadPoolExecutor(len(gens)) if background and len(gens) > 1 else None
    prefetch = ThreadPoolExecutor(1) if background else None
    streams_dev = streams.to(dev)

    def draw(k: int) -> tuple[torch.Tensor, torch.Tensor, list]:
        """The next k steps' data (CPU) and every generator's state right after drawing them."""
        if packed:  # (k, S, d+1, T*B), (k, S, d_out, T'*B), neuron-major, in dtype
            X, Y = sample_chunk_neuron_major(
                stream_tasks, gens, k, c.batch_size, dtype, out_steps, pool
            )
        else:  # (k, S, B, T, d), (k, S, B, T, d_out)
            X, Y = sample_chunk(stream_tasks, gens, k, c.batch_size)
            X = X.to(dtype)
            if forward is not None and out_steps is not None:
                Y = Y[..., out_steps, :]
            Y = Y.to(dtype)
        states = [g.get_state() for g in gens]
        if dev.type == "cuda":  # page-locked: the copy to the GPU runs without stopping the host
            X, Y = X.pin_memory(), Y.pin_memory()
        return X, Y, states

    graphed = None
    if fused_path:
        use_graph = (dev.type == "cuda") if cuda_graph is None else bool(cuda_graph)
        if use_graph and dev.type != "cuda":
            raise ValueError(f"cuda_graph=True needs a CUDA device, not {dev}")
        graphed = _GraphedStep(
            lambda x, y: fused_loss(x, P, y, T, out_steps_dev, scale), opt, window, use_graph
        )

    bar = tqdm(total=c.steps, initial=step, desc=desc, **({} if progress else {"disable": True}))
    pending: Future | None = None
    try:
        while step < c.steps:
            k = min(c.chunk_steps, c.steps - step)
            X, Y, states = pending.result() if pending is not None else draw(k)
            pending = None
            if prefetch is not None and step + k < c.steps:
                pending = prefetch.submit(draw, min(c.chunk_steps, c.steps - step - k))
            if on_cpu:
                if len(gens) < E:  # shared streams: each member reads its own
                    X, Y = X[:, streams], Y[:, streams]
            else:  # each stream crosses to the device once, then each member reads its own
                X, Y = X.to(dev, non_blocking=True), Y.to(dev, non_blocking=True)
                if len(gens) < E:
                    X, Y = X[:, streams_dev], Y[:, streams_dev]
            for i in range(k):
                if graphed is not None:  # loss, gradients and the loss window in one node
                    graphed(X[i], Y[i], before_capture=pending)
                    opt.step()
                else:
                    loss = step_loss(X[i], Y[i])
                    loss.sum().backward()  # the members' gradients stay separate
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                    if fast:
                        window += loss.detach()
                    else:  # the reference reads the loss back every step, as a plain loop would
                        window += torch.tensor(
                            [float(v) for v in loss.detach()], dtype=dtype, device=dev
                        )
                sched.step()
                step += 1
                if step % c.log_every == 0 or step == c.steps:
                    n_win = step - (loss_steps[-1] if loss_steps else 0)
                    losses.append(window / n_win)
                    loss_steps.append(step)
                    window.zero_()  # in place: a captured step adds into this very tensor
                    bar.set_postfix(loss=f"{float(losses[-1].mean()):.3g}", refresh=False)
            bar.update(k)
            if path is not None and c.checkpoint_every and step % c.checkpoint_every == 0:
                if step < c.steps:
                    member_states = [states[int(u)] for u in streams]
                    _save_checkpoint(
                        path, P, opt, sched, member_states, step, loss_steps, losses, window
                    )
    finally:
        for ex in (prefetch, pool):
            if ex is not None:
                ex.shutdown(wait=True, cancel_futures=True)
    bar.close()
    final = {k: v.detach() for k, v in P.items()}
    final = {k: v.cpu().clone() for k, v in (unpack_params(final) if packed else final).items()}
    return TrainResult(
        params=final,
        loss_steps=torch.tensor(loss_steps, dtype=torch.long),
        losses=torch.stack(losses).cpu() if losses else torch.zeros(0, E, dtype=dtype),
        wall_time=time.perf_counter() - t0,
        resumed_from=resumed_from,
    )


#: what one more ensemble adds to a training step, in multiply-adds of ``forward_macs``:
#: fitted on the 2-core CPU this project is measured on (Fig. 3A/B sweeps, T = 8, batch 64:
#: ~1.2 ms per ensemble and step, against ~0.06 ms per million multiply-adds)
ENSEMBLE_OVERHEAD_MACS = 20e6


def forward_macs(d: int, d_out: int, n: int, m: int, T: int, B: int, side: bool = False) -> int:
    """Multiply-adds of one forward of Eq. (2) for one member and one batch of B sequences:
    the gatings' products, the decay-matrix scan (T per state) and the readout, all T steps."""
    if side:
        return T * B * (n * (3 * (d + 1) + T) + d_out * n)
    return T * B * (n * (2 * (d + 1) + T + 2 * m) + d_out * m)


def size_groups(
    sizes: Sequence[tuple[int, int]],
    cost: Callable[[int, int], float],
    overhead: float = ENSEMBLE_OVERHEAD_MACS,
) -> list[list[int]]:
    """Split an ensemble of members of sizes[e] = (n_e, m_e) into ensembles trained apart.

    In one ensemble every member costs what its largest network costs (the smaller ones are
    masked inside it), and each ensemble adds ``overhead`` to a step. Returns the member
    indices of each ensemble (sizes ascending; members of one size stay together): the split of
    the sorted distinct sizes into consecutive runs that minimises the sum over ensembles of
    ``overhead + members * cost(largest n, largest m)``, exactly (dynamic programming).
    """
    classes = sorted(set(sizes))
    counts = [sum(1 for s in sizes if s == c) for c in classes]
    K = len(classes)
    best, cut = [0.0] + [math.inf] * K, [0] * (K + 1)
    for j in range(1, K + 1):
        for i in range(j):  # one ensemble of the sizes classes[i:j]
            n = max(c[0] for c in classes[i:j])
            m = max(c[1] for c in classes[i:j])
            total = best[i] + overhead + sum(counts[i:j]) * cost(n, m)
            if total < best[j]:
                best[j], cut[j] = total, i
    runs, j = [], K
    while j > 0:
        runs.append(set(classes[cut[j] : j]))
        j = cut[j]
    return [[e for e, s in enumerate(sizes) if s in run] for run in reversed(runs)]


def plan_ensembles(
    sizes: Sequence[tuple[int, int]],
    d: int,
    d_out: int,
    T: int,
    B: int,
    side: bool = False,
    *,
    overhead: float = ENSEMBLE_OVERHEAD_MACS,
) -> list[list[int]]:
    """How ``train_by_size`` splits members of sizes (n_e, m_e): ``size_groups`` with the cost
    ``forward_macs`` of Eq. (2) at input size d, output size d_out, T steps, batch B."""
    return size_groups(sizes, lambda n, m: forward_macs(d, d_out, n, m, T, B, side), overhead)


def train_by_size(
    tasks: Sequence[Task],
    students: Sequence[GatedRNN],
    config: TrainConfig,
    *,
    data_seeds: Sequence[int],
    checkpoint: str | os.PathLike | None = None,
    progress: bool = True,
    desc: str = "training",
    device: str | torch.device | None = None,
    overhead: float = ENSEMBLE_OVERHEAD_MACS,
    groups: Sequence[Sequence[int]] | None = None,
) -> TrainResult:
    """``train`` for GatedRNNs of different sizes: a few ensembles of similar sizes, one after
    another (``size_groups``), instead of one in which every member costs the largest.

    Each member's run is the same as in one ensemble (each equals its separate run; tested).
    Returns one TrainResult for all members: params stacked and zero-padded as
    ``stack_students`` stacks them, losses (K, E) in member order, wall_time and resumed_from
    summed over the ensembles. With one ensemble this is ``train`` on ``stack_students``; with
    several, ensemble k checkpoints to ``<stem>-<k><suffix>`` beside ``checkpoint`` and those
    files are deleted once all have finished (the caller deletes ``checkpoint`` as usual).
    ``groups``: the member indices of each ensemble, instead of ``plan_ensembles``'s split
    (which models a CPU; on a GPU, whose step of small kernels costs about the same for a few
    members or for many, the default is one ensemble).
    """
    if len(students) != len(tasks):
        raise ValueError(f"{len(students)} students for {len(tasks)} tasks")
    if len(data_seeds) != len(tasks):
        raise ValueError(f"{len(data_seeds)} data_seeds for {len(tasks)} tasks")
    full, _ = stack_students(students)
    sizes = [(s.n, s.m) for s in students]
    s0 = students[0]
    if groups is None and resolve_device(device).type != "cpu":
        groups = [range(len(students))]  # a GPU runs a step's small kernels side by side
    if groups is None:
        groups = plan_ensembles(
            sizes, s0.d, s0.d_out, tasks[0].T, config.batch_size, s0.side, overhead=overhead
        )
    elif any(not g for g in groups) or sorted(sum(map(list, groups), [])) != [*range(len(tasks))]:
        raise ValueError(f"groups must split the members 0..{len(students) - 1}, got {groups}")
    groups = [list(g) for g in groups]
    path = None if checkpoint is None else Path(checkpoint)
    files = [path] * len(groups)
    if path is not None and len(groups) > 1:
        files = [path.with_name(f"{path.stem}-{k}{path.suffix}") for k in range(len(groups))]
    params = {k: torch.zeros_like(v, dtype=config.torch_dtype) for k, v in full.items()}
    losses, loss_steps, wall, resumed = None, None, 0.0, 0
    for k, idx in enumerate(groups):
        p, masks = stack_students([students[e] for e in idx])
        n_k = max(sizes[e][0] for e in idx)
        res = train(
            [tasks[e] for e in idx],
            p,
            config,
            data_seeds=[data_seeds[e] for e in idx],
            masks=masks,
            checkpoint=files[k],
            progress=progress,
            desc=desc if len(groups) == 1 else f"{desc} n<={n_k}",
            device=device,
        )
        for name, v in res.params.items():  # back into the (E, ...) layout, zero-padded
            params[name][(idx, *(slice(0, s) for s in v.shape[1:]))] = v
        if losses is None:
            loss_steps = res.loss_steps
            losses = torch.zeros(len(loss_steps), len(students), dtype=res.losses.dtype)
        losses[:, idx] = res.losses
        wall += res.wall_time
        resumed += res.resumed_from
    if len(groups) > 1:
        for f in files:
            if f is not None:
                f.unlink(missing_ok=True)
    return TrainResult(params, loss_steps, losses, wall, resumed)


def _optimiser(P: dict, c: TrainConfig, no_decay: Sequence[str]):
    """AdamW (weight decay on every parameter but those named in ``no_decay``) and the cosine
    schedule. Fast mode: one fused kernel for all parameters; reference: the per-parameter loop."""
    decay = [P[k] for k in P if k not in no_decay]
    keep = [P[k] for k in P if k in no_decay]
    groups = [{"params": decay, "weight_decay": c.weight_decay}]
    if keep:
        groups.append({"params": keep, "weight_decay": 0.0})
    fused = {"fused": True} if c.mode == "fast" else {"foreach": False}
    opt = torch.optim.AdamW(groups, lr=c.lr, betas=c.betas, eps=c.eps, **fused)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine_lr(s, c) / c.lr)


def _streams(tasks: Sequence[Task], data_seeds: Sequence[int]):
    """The data streams of an ensemble: members with the same task and data seed (a paired
    sweep: sizes sharing a seed) draw the same stream, drawn once and shared.

    Returns (streams, stream_tasks, generators): streams (E,) member -> its stream, and one
    task and one generator per stream."""
    keys = [(id(t), int(s)) for t, s in zip(tasks, data_seeds, strict=True)]
    unique = list(dict.fromkeys(keys))
    streams = torch.tensor([unique.index(k) for k in keys])
    stream_tasks = [tasks[keys.index(k)] for k in unique]
    return streams, stream_tasks, [torch.Generator().manual_seed(k[1]) for k in unique]


def _restore(state: dict, path: Path, P: dict, opt, sched, gens: list, streams: torch.Tensor):
    """Load a checkpoint's parameters, optimiser, schedule and generator states (in place);
    returns (step, loss_steps, losses, window) as saved."""
    E = len(streams)
    member_states = state["generators"]  # one per member (shared streams: equal states)
    if len(member_states) != E:
        raise ValueError(f"checkpoint {path} holds {len(member_states)} members, not {E}")
    with torch.no_grad():
        for k in P:
            P[k].copy_(state["params"][k])
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    for u, g in enumerate(gens):
        g.set_state(member_states[int((streams == u).nonzero()[0])])
    losses = list(state["losses"].unbind(0))
    return int(state["step"]), state["loss_steps"].tolist(), losses, state["window"]


def _read_checkpoint(path: Path | None) -> dict | None:
    """The saved state at ``path``, or None if there is none; an unreadable file (a run killed
    while the disk was full, a truncated copy) is discarded with a warning naming it, and the
    run starts over."""
    if path is None or not path.exists():
        return None
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except Exception as err:  # noqa: BLE001 - any unreadable checkpoint is discarded
        warnings.warn(f"checkpoint {path} is unreadable ({err}); starting over", stacklevel=3)
        path.unlink()
        return None


def _save_checkpoint(path, P, opt, sched, gen_states, step, loss_steps, losses, window) -> None:
    """Atomically write the run's state (tensors and plain containers: loads with weights_only).
    ``gen_states``: each member's generator state after the data of the steps done so far."""
    state = {  # CPU tensors, loadable anywhere (the optimiser's state moves back on load)
        "params": {k: v.detach().cpu() for k, v in P.items()},
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "generators": list(gen_states),
        "step": step,
        "loss_steps": torch.tensor(loss_steps, dtype=torch.long),
        "losses": torch.stack(losses).cpu() if losses else torch.zeros(0, len(gen_states)),
        "window": window.cpu().clone(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    torch.save(state, tmp)
    os.replace(tmp, path)


def _check_ensemble(tasks, params, data_seeds, masks) -> None:
    E = len(tasks)
    if E == 0:
        raise ValueError("train needs at least one task")
    if len(data_seeds) != E:
        raise ValueError(f"{len(data_seeds)} data_seeds for {E} tasks")
    if not isinstance(params, dict) or not params:
        raise TypeError("params must be a non-empty dict of (E, ...) tensors")
    for k, v in params.items():
        if not isinstance(v, torch.Tensor) or v.dim() < 1 or v.shape[0] != E:
            shape = tuple(v.shape) if isinstance(v, torch.Tensor) else type(v).__name__
            raise ValueError(f"params[{k!r}] must have leading ensemble dim E={E}, got {shape}")
        if masks is not None and (k not in masks or masks[k].shape != v.shape):
            raise ValueError(f"masks[{k!r}] must exist and have the shape of params[{k!r}]")
    t0 = tasks[0]
    for t in tasks[1:]:
        same_mask = (t.loss_mask is None) == (t0.loss_mask is None) and (
            t.loss_mask is None or torch.equal(t.loss_mask, t0.loss_mask)
        )
        if (t.d, t.d_out, t.T, t.loss_scale) != (t0.d, t0.d_out, t0.T, t0.loss_scale) or not (
            same_mask
        ):
            raise ValueError("ensemble tasks must share d, d_out, T, loss_mask and loss_scale")
