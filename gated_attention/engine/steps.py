"""One training step per path, behind one interface: ``step(x, y)`` makes one update of every
member (loss, backward, optimiser, the projection of nu) and adds the members' losses (E,) into
the loss window; ``make_step`` picks the one a run needs.

    FusedStep      the fast path of Eq. (2) with output gating (``fast_path.fused_loss``)
    CompiledStep   the same step in mode "compiled", on a CPU over parts of the batch
    ForwardStep    any other model through its ``forward`` (the other families, side gating,
                   App. D.3's cross-entropy) and autograd
    ReferenceStep  the readable definition, the loss read back every step
x, y: neuron-major (E, d+1, T*B) and (E, d_out, T'*B) on packed weights, else (E, B, T, d) and
(E, B, T or T', d_out).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import Future

import torch
from torch._inductor import config as inductor_config

from ..models.compiled_loss import loss_and_grads
from ..models.fast_path import fused_loss
from .device import GraphedStep, on_side_stream, record_graph
from .losses import Loss, LossSpec, loss_function


class FusedStep:
    """``GraphedStep``'s loss, gradients and window, then the optimiser and the projection."""

    def __init__(self, loss: Loss, opt, project: Callable[[], None], window, capture: bool):
        self.graphed = GraphedStep(loss, opt, window, capture)
        self.opt, self.project = opt, project

    def __call__(self, x: torch.Tensor, y: torch.Tensor, before_capture: Future | None = None):
        self.graphed(x, y, before_capture=before_capture)
        self.opt.step()
        self.project()


#: the most bytes of intermediates a compiled step on a CPU computes at once (``batch_parts``),
#: sized to a 2-core AMD EPYC's 32 MiB of L3 cache
PART_BYTES = 16 * 2**20
#: the fewest sequences of a part (smaller parts: more calls than the cache saves)
PART_MIN = 8


def batch_parts(P: dict, spec: LossSpec, B: int, device: torch.device) -> int:
    """The parts a compiled step splits its batch of B sequences into: 1 off the CPU (a GPU's
    step is launch-bound); else the fewest halvings of B after which a part's intermediates are
    at most ``PART_BYTES``, no part under ``PART_MIN``."""
    if device.type != "cpu":
        return 1
    E, two_n, d1 = P["W_in"].shape
    n, m, d_out = two_n // 2, P["W_out"].shape[1] // 2, P["D"].shape[1]
    per_sequence = E * spec.T * (8 * n + 5 * m + 2 * d_out + d1) * P["W_in"].element_size()
    parts = 1
    while (
        B % (2 * parts) == 0
        and B // (2 * parts) >= PART_MIN
        and per_sequence * B / parts > PART_BYTES
    ):
        parts *= 2
    return parts


class CompiledStep:
    """Mode "compiled": ``loss_and_grads`` and, for AdamW, ``adamw_update`` of the weights and
    the optimiser's own state, compiled as one function per shape; other optimisers step as
    usual on the gradients. The optimiser keeps its state and rate, so checkpoints work as in
    mode "fast". On a CPU a large batch goes in ``batch_parts`` parts (summed: the whole
    batch's up to rounding). With ``capture`` (CUDA, AdamW) the whole step is one CUDA graph,
    recorded as ``GraphedStep`` records, the schedule's lr written into its tensor outside."""

    NAMES = ("W_in", "nu", "W_out", "D")
    WARMUP = GraphedStep.WARMUP

    def __init__(self, P: dict, opt, project, window, spec: LossSpec, capture: bool = False):
        self.P, self.opt, self.project, self.window, self.spec = P, opt, project, window, spec
        self.adamw = isinstance(opt, torch.optim.AdamW)
        self.parts = None  # batch_parts, at the first batch
        compiled = functools.partial(torch.compile, dynamic=False, options=_options(window.device))
        self.fn = compiled(_adamw_step)
        self.part_fn = compiled(loss_and_grads)
        self.apply_fn = compiled(adamw_apply)
        self.lr = torch.zeros((), dtype=torch.float64, device=window.device)
        self.rates = getattr(opt, "member_rates", None)  # each member's rate: eagerly
        self.capture = capture and self.adamw and self.rates is None
        self.graph, self.eager_steps, self.X, self.Y = None, 0, None, None
        self.side = torch.cuda.Stream(window.device) if self.capture else None

    def __call__(self, x: torch.Tensor, y: torch.Tensor, before_capture: Future | None = None):
        s, weights = self.spec, [self.P[k].detach() for k in self.NAMES]
        if self.parts is None:
            self.parts = batch_parts(self.P, s, x.shape[-1] // s.T, x.device)
        if not self.adamw:
            loss, grads = self._in_parts(weights, x, y)
            for k, g in zip(self.NAMES, grads, strict=True):
                self.P[k].grad = g
            self.opt.step()
            self.window += loss
            self.project()
        elif self.capture:
            self._graphed(x, y, before_capture)
        else:
            if self.rates is not None:
                self.rates.before_step()
            self._update(x, y, *self._adamw_state())
            if self.rates is not None:
                self.rates.after_step()
                self.project()  # after the members' moves are scaled
        self.opt._opt_called = True  # what opt.step() tells the schedule: it has stepped

    def _update(self, x: torch.Tensor, y: torch.Tensor, state: list, hyper: tuple) -> None:
        s, weights = self.spec, [self.P[k].detach() for k in self.NAMES]
        if self.parts == 1:
            self.fn(weights, x, y, s.T, s.out_steps, s.scale, state, self.window, *hyper)
        else:
            loss, grads = self._in_parts(weights, x, y)
            self.apply_fn(weights, grads, loss, state, self.window, *hyper)
        self.project()

    def _in_parts(self, weights: list, x: torch.Tensor, y: torch.Tensor) -> tuple:
        """(loss, grads) of the whole batch, summed over ``parts`` equal ranges of b."""
        s, k = self.spec, self.parts
        B = x.shape[-1] // s.T
        b = B // k
        loss, grads = None, None
        for i in range(k):
            xi, yi = (v.view(*v.shape[:-1], -1, B)[..., i * b : (i + 1) * b] for v in (x, y))
            xi, yi = (v.reshape(*v.shape[:-2], -1) for v in (xi, yi))
            part, *g = self.part_fn(*weights, xi, yi, s.T, s.out_steps, s.scale / k)
            if loss is None:
                loss, grads = part, g
            else:
                loss = loss + part
                torch._foreach_add_(grads, g)
        return loss, grads

    def _graphed(self, x: torch.Tensor, y: torch.Tensor, before_capture: Future | None) -> None:
        """The step on a CUDA device as one graph (class docstring)."""
        if self.X is None:
            self.X, self.Y = torch.empty_like(x), torch.empty_like(y)
        self.X.copy_(x)
        self.Y.copy_(y)
        state, hyper = self._adamw_state()  # writes lr, outside any recording
        if self.graph is not None:
            self.graph.replay()
            return
        step = lambda: self._update(self.X, self.Y, state, hyper)  # noqa: E731
        if self.eager_steps < self.WARMUP:
            self.eager_steps += 1
            on_side_stream(self.side, self.window.device, step)
            return
        self.graph = record_graph(step, before_capture, self.side)
        if self.graph is None:  # not recordable: eagerly from now on
            self.capture = False
            step()
            return
        self.graph.replay()  # recording ran nothing: this is the step itself

    def _adamw_state(self):
        """(per weight (exp_avg, exp_avg_sq, step, weight_decay), (lr tensor, betas, eps))."""
        group_of = {id(p): g for g in self.opt.param_groups for p in g["params"]}
        state = []
        for k in self.NAMES:
            p, st = self.P[k], self.opt.state[self.P[k]]
            if not st:
                st["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
                st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state.append(
                (st["exp_avg"], st["exp_avg_sq"], st["step"], group_of[id(p)]["weight_decay"])
            )
        g0 = self.opt.param_groups[0]
        self.lr.fill_(g0["lr"])
        return state, (self.lr, g0["betas"], g0["eps"])


def adamw_update(w, g, exp_avg, exp_avg_sq, step, wd: float, lr, betas, eps: float) -> None:
    """One AdamW update of weight w (gradient g) and its state, in place, as
    ``torch.optim.AdamW`` makes it: w <- w (1 - lr wd) - lr m_hat / (sqrt(v_hat) + eps), with
    m, v the moving averages of g and g^2 and their bias corrections at ``step`` + 1."""
    b1, b2 = betas
    step.add_(1)
    k = step.to(torch.float64)  # the bias corrections in double, as the fused kernel has them
    w.mul_(1 - lr * wd)
    exp_avg.lerp_(g, 1 - b1)
    exp_avg_sq.mul_(b2).addcmul_(g, g, value=1 - b2)
    denom = (exp_avg_sq.sqrt() / (1 - b2**k).sqrt()).add_(eps)
    w.sub_(exp_avg / denom * (lr / (1 - b1**k)))


def _options(device: torch.device) -> dict | None:
    """``cpp_wrapper`` on a CPU (same kernels, less time between), not on a GPU or while counted."""
    python = device.type != "cpu" or inductor_config.cpp.enable_kernel_profile
    return None if python else {"cpp_wrapper": True}


def _adamw_step(weights, x, y, T, out_steps, scale, state, window, lr, betas, eps) -> None:
    """``loss_and_grads`` and ``adamw_apply`` as one function for ``torch.compile``."""
    loss, *grads = loss_and_grads(*weights, x, y, T, out_steps, scale)
    adamw_apply(weights, grads, loss, state, window, lr, betas, eps)


def adamw_apply(weights, grads, loss, state, window, lr, betas, eps) -> None:
    """Every weight's ``adamw_update`` and the losses into ``window``."""
    for w, g, (m, v, step, wd) in zip(weights, grads, state, strict=True):
        adamw_update(w, g, m, v, step, wd, lr, betas, eps)
    window.add_(loss)


class ForwardStep:
    """A model through autograd: the members' summed loss backward (their gradients stay
    separate), the optimiser, the projection; the losses add into the window on the device."""

    def __init__(self, loss: Loss, opt, project: Callable[[], None], window: torch.Tensor):
        self.loss, self.opt, self.project, self.window = loss, opt, project, window

    def __call__(self, x: torch.Tensor, y: torch.Tensor, before_capture: Future | None = None):
        loss = self.loss(x, y)
        loss.sum().backward()
        self.opt.step()
        self.project()
        self.opt.zero_grad(set_to_none=True)
        self.add(loss.detach())

    def add(self, loss: torch.Tensor) -> None:
        self.window += loss


class ReferenceStep(ForwardStep):
    """``ForwardStep`` that reads the losses back every step, as a plain loop would."""

    def add(self, loss: torch.Tensor) -> None:
        w = self.window
        self.window += torch.tensor([float(v) for v in loss], dtype=w.dtype, device=w.device)


def make_step(
    P: dict[str, torch.Tensor],
    masks: dict[str, torch.Tensor] | None,
    opt,
    project: Callable[[], None],
    window: torch.Tensor,
    spec: LossSpec,
    *,
    mode: str,
    capture: bool,
):
    """The step object of a run (module docstring); ``capture`` (CUDA): a CUDA graph.

    On packed weights masked entries stay exactly zero without re-masking: a padded neuron's
    zero rows get exactly zero gradient and AdamW moves them by exactly zero (tested).
    """
    if spec.packed and "W_out" in P and mode == "compiled":
        return CompiledStep(P, opt, project, window, spec, capture)
    if spec.packed and "W_out" in P:
        fused = lambda x, y: fused_loss(x, P, y, spec.T, spec.out_steps, spec.scale)  # noqa: E731
        return FusedStep(fused, opt, project, window, capture)
    cls = ReferenceStep if mode == "reference" else ForwardStep
    loss = loss_function(P, masks, spec)
    if mode == "compiled":  # the forward and the loss compiled, their backward by AOTAutograd
        loss = torch.compile(loss, dynamic=False)
    if capture and mode != "reference":  # on a GPU: the loss and its backward as one graph
        return FusedStep(loss, opt, project, window, capture)
    return cls(loss, opt, project, window)
