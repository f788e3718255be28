"""``train``: the training loop of an ensemble of students, AdamW + cosine annealing (Sec. 4.1).

An ensemble equals E separate runs: the loss is the sum of the members' losses, AdamW is
elementwise, nothing couples the members (no clipping across them), and each member draws from
its own generator (``tests/test_training.py`` checks it, and that a resumed run ends where an
uninterrupted one does). Masked weights (a smaller member inside the largest) stay exactly zero.

Modes (``TrainConfig.mode``; what each costs: book/reference.md, "Engine modes"):
    "fast"       Eq. (2) fused on packed weights and neuron-major data (``steps.FusedStep``),
                 a hand-written backward, the fused AdamW, the loss read back once per window
    "compiled"   the same step compiled by ``torch.compile`` (``steps.CompiledStep``; any other
                 model's forward and loss likewise): other rounding; needs a C++ compiler
    "reference"  the readable definition: a loop over t, ``masked_mse``, a per-parameter AdamW,
                 the loss read back every step
On a GPU the step is recorded once as a CUDA graph and replayed, the data drawn there
(``data_on_device``) or on the host in background threads (``data.DataFeed``).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from tqdm import tqdm

from ..models.fast_path import pack_params, unpack_params
from ..models.gated_rnn import gated_rnn_forward
from ..tasks.protocol import Task, check_task
from .checkpoints import read_checkpoint, restore, save_checkpoint
from .config import TrainConfig, TrainResult, cosine_lr
from .data import DataFeed, data_streams
from .data import data_on_device as data_on_device_for
from .device import (
    draw_in_background,
    flush_denormals,
    keep_freed_memory,
    resolve_device,
    training_threads,
)
from .guards import (
    DivergenceGuard,
    check_ensemble,
    check_gated_shapes,
    check_on_nonfinite,
    nonfinite_members,
)
from .loss_log import LossLog
from .losses import LossSpec
from .member_rates import MemberRates, check_member_lrs
from .steps import make_step

Forward = Callable[[torch.Tensor, dict], torch.Tensor]


def _on_training_threads(fn):
    """Run ``fn`` (``train``) with the torch threads of ``device.training_threads``."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with training_threads(resolve_device(kwargs.get("device"))):
            return fn(*args, **kwargs)

    return run


@_on_training_threads
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
    on_log: Callable[[int, dict[str, torch.Tensor]], None] | None = None,
    on_nonfinite: str = "raise",
    data_on_device: bool | None = None,
    member_lrs: Sequence[float] | None = None,
) -> TrainResult:
    """Train an ensemble of E students, member e on ``tasks[e]`` with data from ``data_seeds[e]``.

    Args:
        tasks: E tasks (same d, d_out, T, loss_mask and loss_scale; teachers may differ).
        params: dict of (E, ...) tensors (e.g. from ``stack_students``); copied, not modified.
        data_seeds: E seeds; member e's data comes from ``torch.Generator().manual_seed(seed)``.
        masks: optional 0/1 tensors (as from ``stack_students``): the model sees params * masks.
        no_decay: parameter names without weight decay (nu, Sec. 4.1).
        forward: a model ``forward(x (E, B, T, d), params) -> y (E, B, T, d_out)``; None: the
            gated RNN of Eq. (2).
        checkpoint: a file the run saves its state to every ``config.checkpoint_every`` steps
            and, if it exists, resumes from; the caller deletes it when done.
        progress: show a tqdm bar (TQDM_DISABLE=1 also turns it off).
        device: ``resolve_device``'s; the returned parameters and losses are CPU tensors.
        cuda_graph: record the step as a CUDA graph (any model but mode "reference"); None: on a
            CUDA device.
        on_log: called as ``on_log(step, params)`` at the end of every logged window, params a
            detached CPU copy in the layout of ``params``.
        on_nonfinite: "raise": a NaN or inf window loss, or weights at a checkpoint or at the
            end, stops the run with ``NonFiniteLossError`` (no checkpoint written after it);
            "keep": train on, a diverged member ending with NaN losses and weights.
        data_on_device: draw the data on ``device`` (tasks with ``draws_on_device``); None: on a
            GPU when the tasks can. A GPU's generators draw other numbers than the CPU's.
        member_lrs: E rates, member e training as at ``config.lr = member_lrs[e]`` (schedule
            included, ``member_rates``); None: all at ``config.lr``.

    Raises:
        NonFiniteLossError: see ``on_nonfinite``.
        ValueError: the tasks do not match the parameters (the gated RNN's d + 1 input
            columns, d_out output rows), or the first step fails on their shapes.
    """
    tasks = _checked(tasks, params, data_seeds, masks, forward, on_nonfinite)
    check_member_lrs(member_lrs, len(tasks), config)
    flush_denormals()  # see there: subnormal weights of dead neurons slow a step ~6x
    keep_freed_memory()  # see there: each step's buffers without page faults
    dev, E, c, t0 = resolve_device(device), len(tasks), config, time.perf_counter()
    forward, packed = _model(c, forward)
    P, Mk = _placed(params, masks, pack_params if packed else dict, c.torch_dtype, dev)
    project = _projection(P, c.nu_min)
    project()
    opt, sched = optimiser(P, c, no_decay)
    if member_lrs is not None:
        MemberRates(opt, sched, c, member_lrs)
    on_dev = data_on_device_for(tasks, dev, data_on_device)
    streams, stream_tasks, gens = data_streams(tasks, data_seeds, dev if on_dev else None)
    mask_t, T, scale = tasks[0].loss_mask, tasks[0].T, float(tasks[0].loss_scale)
    out_steps = None if mask_t is None else torch.nonzero(mask_t).flatten()  # for the data
    log, step = LossLog(E, c.torch_dtype, dev), 0
    path = None if checkpoint is None else Path(checkpoint)
    state = read_checkpoint(path)
    if state is not None:
        step, *curve = restore(state, path, P, opt, sched, gens, streams)
        log.resume(*curve)
    resumed_from = step
    capture = (dev.type == "cuda") if cuda_graph is None else bool(cuda_graph)
    if capture and dev.type != "cuda":
        raise ValueError(f"cuda_graph=True needs a CUDA device, not {dev}")
    spec = LossSpec(packed, forward, c.loss, T, _on(out_steps, dev), _on(mask_t, dev), scale)
    step_fn = make_step(P, Mk, opt, project, log.window, spec, mode=c.mode, capture=capture)
    feed = DataFeed(
        stream_tasks, gens, streams, members=E, batch_size=c.batch_size, dtype=c.torch_dtype,
        out_steps=out_steps, packed=packed, cut_targets=forward is not None, device=dev,
        background=draw_in_background(dev) and not on_dev,
    )  # fmt: skip
    bar = tqdm(total=c.steps, initial=step, desc=desc, **({} if progress else {"disable": True}))

    def result() -> TrainResult:
        """The run so far: CPU parameters in the layout of ``params``, the logged losses."""
        return _result(P, packed, log, E, c.torch_dtype, time.perf_counter() - t0, resumed_from)

    good = None if state is None else (path, step)
    guard = DivergenceGuard(on_nonfinite, c, step, good, result, bar.close)
    try:
        while step < c.steps:
            X, Y, states, k = feed.next(step, c.steps, c.chunk_steps)
            for i in range(k):
                _first_step_named(
                    step_fn, X[i], Y[i], feed.pending, step > resumed_from, tasks, params
                )
                sched.step()
                step += 1
                if step % c.log_every == 0 or step == c.steps:
                    _close_window(log, step, bar, guard, on_log, P, packed)
            bar.update(k)
            due = c.checkpoint_every and step % c.checkpoint_every == 0 and step < c.steps
            if path is not None and due:
                member_states = [states[int(u)] for u in streams]
                drew = gens[0].device.type
                _checkpoint(path, P, opt, sched, member_states, step, log, guard, drew)
        if on_nonfinite == "raise":  # the last update may have broken the weights
            guard.check(nonfinite_members(P), "weights", step)
    finally:
        feed.close()
    bar.close()
    return result()


def _close_window(log: LossLog, step: int, bar, guard: DivergenceGuard, on_log, P, packed) -> None:
    """The end of a logged window: its read-back shown, checked, and ``on_log`` called."""
    read = log.close(step)
    bar.set_postfix(loss=f"{float(read.mean()):.3g}", refresh=False)
    guard.check(~torch.isfinite(read), "loss", step)
    if on_log is not None:
        now = {k: v.detach().cpu().clone() for k, v in P.items()}
        on_log(step, unpack_params(now) if packed else now)


def _checked(tasks, params, data_seeds, masks, forward, on_nonfinite) -> list:
    """The tasks, each checked, once the ensemble's inputs agree."""
    check_on_nonfinite(on_nonfinite)
    tasks = [check_task(t) for t in tasks]
    check_ensemble(tasks, params, data_seeds, masks)
    if forward is None:
        check_gated_shapes(tasks[0], params)
    return tasks


def _model(c: TrainConfig, forward: Forward | None) -> tuple[Forward | None, bool]:
    """(forward, packed): Eq. (2)'s own forward for the cross-entropy; packed: fused Eq. (2)."""
    if c.loss == "cross_entropy" and forward is None:
        mode = "reference" if c.mode == "reference" else "parallel"
        forward = lambda x, p: gated_rnn_forward(x, p, mode=mode)  # noqa: E731
    return forward, c.mode != "reference" and forward is None


def _on(t: torch.Tensor | None, dev: torch.device) -> torch.Tensor | None:
    return None if t is None else t.to(dev)


def _checkpoint(path, P, opt, sched, member_states, step, log, guard, drew="cpu") -> None:
    """Save the run at ``step`` unless ``guard`` finds it diverged; the last good checkpoint."""
    if guard.on == "raise":
        guard.check(
            nonfinite_members(P) | ~torch.isfinite(log.window.cpu()), "loss or weights", step
        )
    save_checkpoint(
        path, P, opt, sched, member_states, step, log.loss_steps, log.losses, log.window, drew
    )
    guard.good = (path, step)


def _placed(params, masks, pack, dtype, dev):
    """(P, Mk): the trained tensors, masked entries zero, and the masks (None: none masked)."""
    if masks is not None and all(bool(v.all()) for v in masks.values()):
        masks = None  # nothing is masked: skip the multiplications
    P = {
        k: v.detach().to(dtype=dtype, device=dev).clone().requires_grad_(True)
        for k, v in pack(params).items()
    }
    if masks is None:
        return P, None
    Mk = {k: v.to(dtype=dtype, device=dev) for k, v in pack(masks).items()}
    with torch.no_grad():
        for k in P:
            P[k].mul_(Mk[k])
    return P, Mk


def _projection(P: dict, nu_min: float | None) -> Callable[[], None]:
    """The in-place projection of nu onto nu >= nu_min (``TrainConfig.lam_max``)."""

    def project() -> None:
        if nu_min is not None and "nu" in P:
            with torch.no_grad():
                P["nu"].clamp_(min=nu_min)

    return project


def _result(P, packed, log, E, dtype, wall_time, resumed_from) -> TrainResult:
    final = {k: v.detach() for k, v in P.items()}
    final = {k: v.cpu().clone() for k, v in (unpack_params(final) if packed else final).items()}
    return TrainResult(
        params=final,
        loss_steps=torch.tensor(log.loss_steps, dtype=torch.long),
        losses=torch.stack(log.losses).cpu() if log.losses else torch.zeros(0, E, dtype=dtype),
        wall_time=wall_time,
        resumed_from=resumed_from,
    )


def _first_step_named(step_fn, x, y, pending, started, tasks, params) -> None:
    """One step; the very first step's error becomes a ValueError naming the shapes."""
    try:
        step_fn(x, y, before_capture=pending)
    except torch.OutOfMemoryError:
        raise
    except RuntimeError as err:
        if started:
            raise
        t = tasks[0]
        raise ValueError(
            f"the first training step failed: tasks have d={t.d}, d_out={t.d_out}, T={t.T}; "
            f"params have {', '.join(f'{n} {tuple(v.shape)}' for n, v in params.items())} "
            f"(does the network fit the task?): {err}"
        ) from err


def optimiser(P: dict, c: TrainConfig, no_decay: Sequence[str]):
    """The optimiser ``c.optimiser`` (weight decay on every parameter not in ``no_decay``) and
    the schedule ``c.schedule``:

    "adamw": decoupled decay, theta <- theta (1 - lr wd) - lr m / (sqrt(v) + eps) (Sec. 4.1);
    "adam_l2": Adam on grad L + wd theta (the fixed points of L + wd/2 |theta|^2);
    "sgd_l2": plain SGD (no momentum) on grad L + wd theta.
    """
    decay = [P[k] for k in P if k not in no_decay]
    keep = [P[k] for k in P if k in no_decay]
    groups = [{"params": decay, "weight_decay": c.weight_decay}]
    if keep:
        groups.append({"params": keep, "weight_decay": 0.0})
    if c.optimiser == "sgd_l2":
        opt = torch.optim.SGD(groups, lr=c.lr, momentum=0.0)
    else:
        fused = {"foreach": False} if c.mode == "reference" else {"fused": True}
        cls = torch.optim.AdamW if c.optimiser == "adamw" else torch.optim.Adam
        opt = cls(groups, lr=c.lr, betas=c.betas, eps=c.eps, **fused)
    factor = (lambda s: cosine_lr(s, c) / c.lr) if c.lr > 0 else (lambda s: 1.0)  # lr 0: stays 0
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)
