"""The ways to the floor: each way a training step could be made faster, measured as a row of
``make bench`` beside the engine's own step, and the operations a step dispatches.

Each row times one training step of the engine's own step objects (``engine.steps``) without
drawing data (the same fixed batch every step), so that a row differs from the engine's in one
way only, at the Sec. 4.1 config (one student, n = m = 100) and for the 16 x n = 28 ensemble.
Every row's runs take turns (``bench_timing.fastest``): on a machine whose speed changes for
stretches of seconds, a row timed alone could fall wholly in a slow stretch (one such bench read
4.68 ms for "compiled" and 2.72 for "whole", the same code at one student).

    engine    the engine's step: ``fast_path.fused_loss`` (Eq. (2) and its loss, one node with a
              hand-written backward) and the fused AdamW kernel (``steps.FusedStep``)
    compiled  the engine's step in mode "compiled" (``steps.CompiledStep``): the loss, its
              hand-written gradients and the AdamW update compiled as one function; a batch
              whose intermediates would outgrow the caches in parts (``steps.batch_parts``)
    whole     the same with every batch whole (``device_time.whole_batches``), as on a GPU
    compile   (a) ``torch.compile`` of the forward and the loss (the backward made by
              AOTAutograd), run by the engine's ``ForwardStep``
    autograd  (b) without the hand-written backward: autograd through ``forward_packed``
    foreach   (c) AdamW as foreach kernels instead of the one fused kernel
    flat      (e) every weight a view into one flat vector, AdamW as six in-place operations
              on it (``FlatAdamW``: one gradient tensor, no list of tensors to walk)
    quadratic (f) mode "compiled" with the input gating as one product on the pairs of inputs
              (``quadratic_gating``: u = M Z, no 2n-wide intermediate kept for the backward)
    inplace   (g) the engine's step with the recurrence as an in-place scan over t instead of
              the decay matrix's products (``inplace_scan``), eagerly
    data      (d) drawing one step's data, per step: member by member as the engine does
              (``engine.data``), and the same inputs with the teachers' labels computed for all
              members at once (``batch_labels=True``: one product per factor, the GPU's way)

The kernels a step launches against the ensemble's size are counted by
``device_time.kernels_by_members``.

A way that cannot run here (``torch.compile`` without a C++ compiler) is a row with its error.
"""

from __future__ import annotations

import torch

from gated_attention.engine import TrainConfig, stack_students
from gated_attention.engine.config import cosine_lr
from gated_attention.engine.data import sample_chunk_neuron_major
from gated_attention.engine.device import keep_freed_memory
from gated_attention.engine.loop import optimiser
from gated_attention.engine.losses import LossSpec, loss_function
from gated_attention.engine.steps import ForwardStep, FusedStep, make_step
from gated_attention.experiments.profiles import derive_seed
from gated_attention.models.fast_path import inputs_neuron_major, pack_params
from gated_attention.models.gated_rnn import GatedRNN
from gated_attention.tasks.teacher_student import TeacherStudentTask
from lab import inplace_scan, quadratic_gating
from lab.bench_timing import best_seconds, fastest, seconds
from lab.device_time import whole_batches

__all__ = [
    "WAYS",
    "ways_to_floor",
]

#: the rows, in order: (key, what it changes against the engine's step)
WAYS = (
    ("engine", "engine: hand-written backward, fused AdamW"),
    ("compiled", "engine, mode compiled: loss, grads, AdamW"),
    ("whole", "engine, mode compiled, every batch whole"),
    ("compile", "(a) torch.compile of the forward, AOT bwd"),
    ("autograd", "(b) autograd instead of the hand backward"),
    ("foreach", "(c) foreach AdamW instead of the fused one"),
    ("flat", "(e) AdamW as 6 ops on one flat vector"),
    ("quadratic", "(f) compiled, input gating on x~_j x~_k"),
    ("inplace", "(g) engine, the scan in place, no L"),
)


def _setup(E: int, n: int, d: int, T: int, B: int, seed: int):
    students = [GatedRNN(d, n, n, seed=derive_seed(seed + e, "student")) for e in range(E)]
    params, _ = stack_students(students)
    g = torch.Generator().manual_seed(seed)
    X = inputs_neuron_major(torch.randn(E, B, T, d, generator=g))
    Y = torch.randn(E, d, T * B, generator=g)
    return params, X, Y


def _step(way: str, params: dict, X: torch.Tensor, Y: torch.Tensor, T: int):
    """One training step of ``way`` on the fixed batch (X, Y), as a function of no arguments:
    the engine's own step objects (``engine.steps``) and optimiser, each row changing one
    piece: the mode, the loss function a ``ForwardStep`` runs, or the optimiser."""
    compiled = way in ("compiled", "whole", "quadratic")
    c = TrainConfig(steps=10**6, mode="compiled" if compiled else "fast")
    P = {k: v.float().clone().requires_grad_(True) for k, v in pack_params(params).items()}
    opt, sched = optimiser(P, c, ("nu",))
    if way == "flat":  # the same rate, decay and schedule; the weights views of one vector
        P, opt = FlatAdamW.over(P, c, ("nu",))
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine_lr(s, c) / c.lr)
    if way == "foreach":  # the same groups and schedule, AdamW's foreach kernels
        groups = [
            {"params": g["params"], "weight_decay": g["weight_decay"]} for g in opt.param_groups
        ]
        opt = torch.optim.AdamW(groups, lr=c.lr, betas=c.betas, eps=c.eps, foreach=True)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine_lr(s, c) / c.lr)
    spec = LossSpec(True, None, "mse", T, None, None, 1.0)
    window = torch.zeros(X.shape[0])
    if way in ("compile", "autograd"):
        loss = loss_function(P, None, spec)  # autograd through forward_packed
        step = ForwardStep(torch.compile(loss) if way == "compile" else loss, opt, _no_op, window)
    elif way == "inplace":  # the engine's fused step object, its loss the in-place scan's
        loss = lambda x, y: inplace_scan.inplace_loss(x, P, y, T, None)  # noqa: E731
        step = FusedStep(loss, opt, _no_op, window, capture=False)
    else:
        step = make_step(P, None, opt, _no_op, window, spec, mode=c.mode, capture=False)
    if way == "quadratic":  # the engine's compiled step object, its loss and gradients swapped
        step.fn = torch.compile(quadratic_gating.adamw_step, dynamic=False)
        step.part_fn = torch.compile(quadratic_gating.loss_and_grads, dynamic=False)

    def one() -> None:
        step(X, Y)
        sched.step()

    if way == "whole":

        def one_whole() -> None:
            with whole_batches():
                one()

        one_whole.step = step  # type: ignore[attr-defined]
        return one_whole

    one.step = step  # type: ignore[attr-defined]  # the step object, for the tests
    return one


class FlatAdamW(torch.optim.Optimizer):
    """AdamW on one flat vector (its weights decayed, then the rest): theta <- theta (1 - lr wd)
    on the decayed part, m, v moved, theta <- theta - lr m_hat / (sqrt(v_hat) + eps), as six
    in-place operations on the whole vector (way (e))."""

    def __init__(self, flat: torch.Tensor, c: TrainConfig, n_decay: int):
        super().__init__([flat], {"lr": c.lr})
        self.flat, self.c, self.n_decay, self.k = flat, c, n_decay, 0
        self.m, self.v = torch.zeros_like(flat), torch.zeros_like(flat)

    @classmethod
    def over(cls, P: dict, c: TrainConfig, no_decay: tuple) -> tuple[dict, FlatAdamW]:
        """(views of one flat leaf in P's shapes, decayed weights first; its optimiser)."""
        order = [k for k in P if k not in no_decay] + [k for k in P if k in no_decay]
        flat = torch.cat([P[k].detach().flatten() for k in order]).requires_grad_(True)
        n_decay = sum(P[k].numel() for k in order if k not in no_decay)
        views, start = {}, 0
        for k in order:  # narrow: one view each (a split's views may not see in-place moves)
            views[k] = flat.narrow(0, start, P[k].numel()).view(P[k].shape)
            start += P[k].numel()
        return views, cls(flat, c, n_decay)

    @torch.no_grad()
    def step(self, closure=None) -> None:
        (b1, b2), lr, g = self.c.betas, self.param_groups[0]["lr"], self.flat.grad
        self.k += 1
        self.flat[: self.n_decay].mul_(1 - lr * self.c.weight_decay)
        self.m.lerp_(g, 1 - b1)
        self.v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = self.v.sqrt().div_((1 - b2**self.k) ** 0.5).add_(self.c.eps)
        self.flat.addcdiv_(self.m, denom, value=-lr / (1 - b1**self.k))


def _no_op() -> None:
    """The projection of nu of a run without a cap on lam."""


def _data_timers(E: int, d: int, T: int, B: int, seed: int, chunk: int = 50):
    tasks = [
        TeacherStudentTask.from_seed(d, seed=derive_seed(seed + e, "teacher"), T=T)
        for e in range(E)
    ]

    def member_by_member() -> None:
        gens = [torch.Generator().manual_seed(e) for e in range(E)]
        sample_chunk_neuron_major(tasks, gens, chunk, B, torch.float32)

    def one_draw() -> None:
        gens = [torch.Generator().manual_seed(e) for e in range(E)]
        sample_chunk_neuron_major(tasks, gens, chunk, B, torch.float32, batch_labels=True)

    return member_by_member, one_draw, chunk


def _timer(step, reps: int, dev: torch.device):
    """A function timing ``reps`` calls of ``step`` (seconds), for ``fastest``."""

    def many() -> None:
        for _ in range(reps):
            step()

    return lambda: seconds(many, dev)


def ways_to_floor(
    kind: str = "quick", seed: int = 0, device: torch.device | None = None
) -> list[dict]:
    """The rows of the module docstring: {"way", "what", "one_ms", "ensemble_ms", "error"};
    the data rows (d) too, per step."""
    dev = torch.device("cpu") if device is None else device
    repeats = {"smoke": 1, "quick": 5}[kind]
    reps = {"smoke": 2, "quick": 50}[kind]
    configs = {"one": (1, 100), "ensemble": (16, 28)}
    if kind == "smoke":
        configs = {"one": (1, 8), "ensemble": (2, 6)}
    d, T, B = 4, 32 if kind == "quick" else 8, 64 if kind == "quick" else 8
    keep_freed_memory()  # as ``train`` does: every row's steps side by side, without page faults
    rows, timers = [], {}
    for way, what in WAYS:
        row = {"way": way, "what": what, "one_ms": None, "ensemble_ms": None, "error": None}
        rows.append(row)
        if dev.type != "cpu":
            row["error"] = "measured on the CPU only"
            continue
        try:
            for name, (E, n) in configs.items():
                params, X, Y = _setup(E, n, d, T, B, seed)
                step = _step(way, params, X, Y, T)
                step()  # a compiled step compiles here, untimed
                timers[(way, name)] = _timer(step, reps, dev)
        except Exception as err:  # noqa: BLE001 - a way that cannot run here is a row saying why
            row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
            timers = {k: t for k, t in timers.items() if k[0] != way}
    # every row's runs in turns (``fastest``): a slow stretch of the machine falls on all rows
    for (way, name), s in fastest(timers, repeats).items():
        row = next(r for r in rows if r["way"] == way)
        row[f"{name}_ms"] = 1e3 * s / reps
    E = configs["ensemble"][0]
    for label, idx in (("member by member", 0), ("one draw", 1)):
        data = _data_timers(E, d, T, B, seed)
        ms = 1e3 * best_seconds(data[idx], repeats, dev) / data[2]
        what = f"(d) a step's data, {E} members: {label}"
        rows.append(
            {"way": f"data-{idx}", "what": what, "one_ms": None, "ensemble_ms": ms, "error": None}
        )
    return rows
