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

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from ..models.fast_path import forward_packed, fused_loss, pack_params, unpack_params
from ..models.gated_rnn import gated_rnn_forward
from ..tasks.protocol import Task, check_task, masked_mse
from .checkpoints import read_checkpoint, restore, save_checkpoint
from .config import TrainConfig, TrainResult, cosine_lr
from .data import data_streams, sample_chunk, sample_chunk_neuron_major
from .device import GraphedStep, draw_in_background, flush_denormals, resolve_device
from .guards import ON_NONFINITE, NonFiniteLossError, check_ensemble, check_gated_shapes

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
    on_log: Callable[[int, dict[str, torch.Tensor]], None] | None = None,
    on_nonfinite: str = "raise",
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
        cuda_graph: run the fast step (output gating) as a captured CUDA graph (``GraphedStep``;
            None: on a CUDA device, which is where it exists).
        on_log: called at the end of every logged window as ``on_log(step, params)``, params
            a detached copy of the (E, ...) parameters in the layout of ``params``: what an
            experiment records along the run (its counts, a held-out loss) without a loop of
            its own.
        on_nonfinite: "raise" (default): a member whose logged window loss is NaN or inf (read
            back at the log boundary, no extra per-step sync), or whose weights are non-finite
            at a checkpoint or at the end, stops the run with ``NonFiniteLossError`` naming the
            steps, the members and the last checkpoint with finite weights (none is written
            after the divergence). "keep": train on; a diverged member ends with NaN losses
            and weights (a learning-rate sweep scores it as infinitely bad).

    Raises:
        NonFiniteLossError: see ``on_nonfinite``.
        ValueError: the tasks do not match the parameters (the gated RNN's d + 1 input
            columns, d_out output rows), or the first step fails on their shapes.
    """
    if on_nonfinite not in ON_NONFINITE:
        raise ValueError(
            f"on_nonfinite must be one of {', '.join(ON_NONFINITE)}, got {on_nonfinite!r}"
        )
    tasks = [check_task(t) for t in tasks]
    flush_denormals()  # see there: subnormal weights of dead neurons slow a step ~6x
    dev = resolve_device(device)
    E = len(tasks)
    check_ensemble(tasks, params, data_seeds, masks)
    if forward is None:
        check_gated_shapes(tasks[0], params)
    c = config
    dtype = c.torch_dtype
    t0 = time.perf_counter()
    if masks is not None and all(bool(v.all()) for v in masks.values()):
        masks = None  # nothing is masked: skip the multiplications
    # packed: the fused fast path of Eq. (2) (W_in1, W_in2 and W_out1, W_out2 stored as one
    # tensor each; AdamW is elementwise, so packing changes no number)
    if c.loss == "cross_entropy" and forward is None:
        # the loss reads outputs (E, B, T', V): Eq. (2)'s (parallel, or reference) forward
        mode = "parallel" if c.mode == "fast" else "reference"
        forward = lambda x, p: gated_rnn_forward(x, p, mode=mode)  # noqa: E731
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
    nu_min = c.nu_min  # TrainConfig.lam_max: nu is projected onto nu >= nu_min

    def project() -> None:
        if nu_min is not None and "nu" in P:
            with torch.no_grad():
                P["nu"].clamp_(min=nu_min)

    project()
    opt, sched = optimiser(P, c, no_decay)
    streams, stream_tasks, gens = data_streams(tasks, data_seeds)
    mask_t = tasks[0].loss_mask
    out_steps = None if mask_t is None else torch.nonzero(mask_t).flatten()  # for the data (CPU)
    out_steps_dev = None if out_steps is None else out_steps.to(dev)  # for the model
    mask_dev = None if mask_t is None else mask_t.to(dev)
    scale, T = float(tasks[0].loss_scale), tasks[0].T

    step, loss_steps, losses = 0, [], []
    window = torch.zeros(E, dtype=dtype, device=dev)  # the summed loss of the current log window
    path = None if checkpoint is None else Path(checkpoint)
    state = read_checkpoint(path)
    if state is not None:
        step, loss_steps, losses, window = restore(state, path, P, opt, sched, gens, streams)
        losses = [w.to(dev) for w in losses]
        window = window.to(dtype=dtype, device=dev)
    resumed_from = step
    # the last checkpoint written with finite weights (file, step), and the last step up to
    # which the run was seen finite: what a NonFiniteLossError names
    good_checkpoint = None if state is None else (path, step)
    checked = step

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
            if c.loss == "cross_entropy":
                return cross_entropy(y_hat, y)
            return scale * (y_hat - y).square().mean(dim=(-3, -2, -1))
        y_hat = gated_rnn_forward(x, p, mode="reference")  # the readable definition
        return masked_mse(y_hat, y, mask_dev, scale)

    on_cpu = dev.type == "cpu"
    # off the CPU the data are drawn while the device trains: the next chunk in a background
    # thread, the streams of a chunk in threads of their own (the same numbers: each stream has
    # its own generator, drawn in the same order)
    background = draw_in_background(dev)
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
        graphed = GraphedStep(
            lambda x, y: fused_loss(x, P, y, T, out_steps_dev, scale), opt, window, use_graph
        )

    def result() -> TrainResult:
        """The run so far: CPU parameters in the layout of ``params``, the logged losses."""
        final = {k: v.detach() for k, v in P.items()}
        final = {k: v.cpu().clone() for k, v in (unpack_params(final) if packed else final).items()}
        return TrainResult(
            params=final,
            loss_steps=torch.tensor(loss_steps, dtype=torch.long),
            losses=torch.stack(losses).cpu() if losses else torch.zeros(0, E, dtype=dtype),
            wall_time=time.perf_counter() - t0,
            resumed_from=resumed_from,
        )

    def check_finite(bad: torch.Tensor, what: str) -> None:
        """Raise NonFiniteLossError if ``bad`` (E,) bool (on the CPU) flags a member ("raise")."""
        nonlocal checked
        if on_nonfinite == "keep":
            return
        members = bad.nonzero().flatten().tolist()
        if not members:
            checked = step
            return
        bar.close()
        first = checked + 1
        saved = (
            f"the last checkpoint with finite weights is {good_checkpoint[0]} (step "
            f"{good_checkpoint[1]})"
            if good_checkpoint is not None
            else "no checkpoint was written"
        )
        raise NonFiniteLossError(
            f"training diverged: the {what} of member(s) {members} (ensemble indices) became "
            f"NaN or inf in steps {first}-{step} (lr={c.lr:g}, optimiser {c.optimiser}, "
            f"{c.dtype}); {saved}; on_nonfinite='keep' trains on instead",
            steps=(first, step),
            members=members,
            checkpoint=None if good_checkpoint is None else good_checkpoint[0],
            partial=result(),
        )

    def weights_bad() -> torch.Tensor:
        """(E,) bool on the CPU: the members with a non-finite weight (one read-back)."""
        flags = [~torch.isfinite(v.detach()).flatten(1).all(dim=1) for v in P.values()]
        return torch.stack(flags).any(dim=0).cpu()

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
                try:
                    if graphed is not None:  # loss, gradients and the loss window in one node
                        graphed(X[i], Y[i], before_capture=pending)
                        opt.step()
                        project()
                    else:
                        loss = step_loss(X[i], Y[i])
                        loss.sum().backward()  # the members' gradients stay separate
                        opt.step()
                        project()
                        opt.zero_grad(set_to_none=True)
                        if fast:
                            window += loss.detach()
                        else:  # the reference reads the loss back every step, as a loop would
                            window += torch.tensor(
                                [float(v) for v in loss.detach()], dtype=dtype, device=dev
                            )
                except torch.OutOfMemoryError:
                    raise
                except RuntimeError as err:
                    if step > resumed_from:
                        raise
                    raise ValueError(
                        f"the first training step failed: tasks have d={tasks[0].d}, "
                        f"d_out={tasks[0].d_out}, T={T}; params have "
                        f"{', '.join(f'{n} {tuple(v.shape)}' for n, v in params.items())} "
                        f"(does the network fit the task?): {err}"
                    ) from err
                sched.step()
                step += 1
                if step % c.log_every == 0 or step == c.steps:
                    n_win = step - (loss_steps[-1] if loss_steps else 0)
                    losses.append(window / n_win)
                    loss_steps.append(step)
                    window.zero_()  # in place: a captured step adds into this very tensor
                    read = losses[-1].cpu()  # the window's one read-back, for the bar and the check
                    bar.set_postfix(loss=f"{float(read.mean()):.3g}", refresh=False)
                    check_finite(~torch.isfinite(read), "loss")
                    if on_log is not None:
                        now = {k: v.detach().cpu().clone() for k, v in P.items()}
                        on_log(step, unpack_params(now) if packed else now)
            bar.update(k)
            if path is not None and c.checkpoint_every and step % c.checkpoint_every == 0:
                if step < c.steps:
                    if on_nonfinite == "raise":  # never checkpoint a diverged state
                        check_finite(
                            weights_bad() | ~torch.isfinite(window.cpu()), "loss or weights"
                        )
                    member_states = [states[int(u)] for u in streams]
                    save_checkpoint(
                        path, P, opt, sched, member_states, step, loss_steps, losses, window
                    )
                    good_checkpoint = (path, step)
        if on_nonfinite == "raise":  # the last update may have broken the weights
            check_finite(weights_bad(), "weights")
    finally:
        for ex in (prefetch, pool):
            if ex is not None:
                ex.shutdown(wait=True, cancel_futures=True)
    bar.close()
    return result()


def optimiser(P: dict, c: TrainConfig, no_decay: Sequence[str]):
    """The optimiser ``c.optimiser`` (weight decay on every parameter but those named in
    ``no_decay``) and the schedule ``c.schedule``.

    "adamw": decoupled decay, theta <- theta (1 - lr wd) - lr m / (sqrt(v) + eps) (Sec. 4.1);
    "adam_l2": Adam on grad L + wd theta (the fixed points of L + wd/2 |theta|^2);
    "sgd_l2": plain SGD (no momentum) on grad L + wd theta.
    Fast mode: one fused kernel for all parameters (Adam, AdamW); reference: the per-parameter
    loop.
    """
    decay = [P[k] for k in P if k not in no_decay]
    keep = [P[k] for k in P if k in no_decay]
    groups = [{"params": decay, "weight_decay": c.weight_decay}]
    if keep:
        groups.append({"params": keep, "weight_decay": 0.0})
    if c.optimiser == "sgd_l2":
        opt = torch.optim.SGD(groups, lr=c.lr, momentum=0.0)
    else:
        fused = {"fused": True} if c.mode == "fast" else {"foreach": False}
        cls = torch.optim.AdamW if c.optimiser == "adamw" else torch.optim.Adam
        opt = cls(groups, lr=c.lr, betas=c.betas, eps=c.eps, **fused)
    factor = (lambda s: cosine_lr(s, c) / c.lr) if c.lr > 0 else (lambda s: 1.0)  # lr 0: stays 0
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(E,) mean cross-entropy of logits (E, B, T', V) against the classes of the one-hot
    targets y (E, B, T', V): App. D.3's loss, the outputs at the loss's steps read as logits."""
    E = logits.shape[0]
    loss = F.cross_entropy(logits.flatten(0, -2), y.argmax(dim=-1).flatten(), reduction="none")
    return loss.view(E, -1).mean(dim=1)
