"""A run's device time on the recorded GPU, predicted from its counted kernels and FLOPs.

A training step on a GPU costs at least the larger of two times:

    launch-bound      kernels x ``t_kernel``: every operation is a kernel of a few microseconds,
                      however little it computes (the networks here are small);
    arithmetic-bound  FLOPs / the GPU's measured matrix-multiply peak (``gemm_peak_gflops``).

Both counts are measured here, on the CPU, on the run's own step: ``job_run`` runs an
experiment's job inside ``lab.probe.probing()``, which stops it at its first ``train`` call with
that call's arguments (tasks, parameters, config, seeds, forward); ``step_counts`` then trains
that run for k and for 2k steps, in the run's own mode or the one asked for, and takes the
difference, over k:

    kernels  from ``torch.profiler``'s events (``launched``): the operations that do device
             work (views, allocations and host reads left out), each counted once, and the
             kernels ``torch.compile`` generates where the run compiles (a family's compiled
             cell loop, mode "compiled"), each counted as its loop nests (``loop_nests``: a
             GPU kernel runs one); the data drawn a chunk at a time included
    FLOPs    ``torch.utils.flop_counter``: matrix products, forward and backward

Steps of runs of the same shapes are counted once, their kernels once for all widths.

``t_kernel`` is calibrated on the recorded GPU bench: its one-student step time at the bench's
config over the kernels of that step counted the same way (the data, drawn on the host there,
left out), from the code the bench ran: a bench records that count ("step_kernels"), and the
recorded H200 bench, older than the count, has it counted afterwards at its own commit. So a
kernel's time is that bench's whole step (its graphed loss and gradients, the optimiser, the
loop) shared out over its kernels; the prediction is of a step of the same
make, with the data drawn on the device.

Glossary (code name -> meaning):
    t_kernel     seconds per kernel on the recorded GPU (launch-bound steps)
    peak_flops   FLOP/s of the recorded GPU's large float32 matmul (arithmetic-bound steps)
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import torch
from torch._inductor import config as inductor_config
from torch.utils.flop_counter import FlopCounterMode

from gated_attention.engine import TrainConfig, stack_students, steps, train
from gated_attention.experiments.profiles import derive_seed
from gated_attention.models.gated_rnn import GatedRNN
from gated_attention.tasks.teacher_student import TeacherStudentTask
from lab.probe import TrainCall, probing

__all__ = [
    "KERNEL_FREE",
    "GEMMS",
    "launched",
    "scalar_promotion",
    "kernel_profile",
    "loop_nests",
    "generated_nests",
    "job_run",
    "step_kernels",
    "flops_per_step",
    "step_counts",
    "bench_run",
    "kernels_by_members",
    "calibrate",
    "step_seconds",
    "run_key",
    "kernel_key",
]


def job_run(config: Any, job: Any) -> dict | None:
    """The arguments of the first ``train`` call of ``config``'s ``job``, stopped there
    (``probe.probing``); None for a job that trains nothing through the engine."""
    with probing():
        try:
            config.train_job(job, checkpoint=None, progress=False)
        except TrainCall as call:
            return call.arguments
    return None


def run_key(run: dict) -> tuple:
    """What a step's FLOPs depend on: the parameters' shapes, the model, T, the batch, the loss
    and the data."""
    shapes = tuple(sorted((k, tuple(v.shape)) for k, v in run["params"].items()))
    return shapes, *kernel_key(run)[1:]


def kernel_key(run: dict) -> tuple:
    """What a step's kernels depend on: ``run_key`` with the parameters' names and members in
    place of their shapes (a network of other widths runs the same operations; counted once, a
    compiled one is compiled once)."""
    c, task = run["config"], run["tasks"][0]
    names = (tuple(sorted(run["params"])), len(run["tasks"]))
    forward = _forward_name(run["forward"])
    rates = run.get("member_lrs") is not None  # each member's rate: its own kernels a step
    return names, forward, task.T, type(task).__name__, c.batch_size, c.loss, c.dtype, c.mode, rates


def _forward_name(forward) -> str:
    """A family's forward by its module and name: the families' forms share their names (the
    LSTM's and the GRU's ``compiled``), and a key by name alone counted one for the other."""
    if forward is None:
        return "None"
    name = getattr(forward, "__qualname__", None)
    module = getattr(forward, "__module__", None)
    return f"{module}.{name}" if name else repr(forward)


#: aten operations that launch no device work: views, allocations, metadata, and host reads
#: (``_local_scalar_dense``: the CPU's fused AdamW reads its step counters, which on a GPU
#: stay on the device)
KERNEL_FREE = frozenset(
    """alias as_strided as_strided_ chunk conj _conj detach detach_ diagonal empty empty_like
    empty_strided expand expand_as flatten imag is_nonzero item lift_fresh _local_scalar_dense
    narrow new_empty new_empty_strided numpy_T permute real _reshape_alias reshape resize_
    resolve_conj resolve_neg
    result_type scalar_tensor select set_ slice split split_with_sizes squeeze t to
    transpose unbind unflatten unsqueeze _unsafe_view view view_as view_as_complex
    view_as_real""".split()
)


#: matrix products: one library call each on a GPU (cuBLAS reads strided batches and
#: transposed or conjugated operands as they are, and copies an operand it cannot read at most
#: once), where the CPU's may copy operands batch by batch (a complex or broadcast batch)
GEMMS = frozenset(("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"))


def scalar_promotion(e) -> bool:
    """Whether a profiler event is a 0-dimensional operand converted inside another operation
    (``mul(x, 2.0)``, ``mean``'s division by the count, a CPU step counter's ``add_``): the
    CPU copies the wrapped number into the operation's dtype, a GPU passes it to the kernel as
    an argument. Needs the profile's ``record_shapes``; without shapes it is never one."""
    parent, shapes = e.cpu_parent, getattr(e, "input_shapes", None)
    return (
        e.name == "aten::to"
        and parent is not None
        and parent.name.startswith("aten::")
        and bool(shapes)
        and shapes[0] == []
    )


def launched(events, nests: dict[str, int] | None = None) -> int:
    """The kernels among torch.profiler events: under each top-level event, the lowest events
    that do device work (an aten operation not in ``KERNEL_FREE``, or a loop that
    ``torch.compile`` generated: ``cpp_fused_*``, ``triton_*``, a CPU one counted as its
    ``nests`` entry where it has one: ``loop_nests``), each counted once; an operation
    that only calls others (``linear``: ``t`` and ``addmm``) counts what it calls. A matrix
    product (``GEMMS``) counts itself and at most one copy per operand, whatever the CPU's
    implementation copies under it. A ``_foreach_*`` operation is one multi-tensor kernel, as
    a GPU launches it (the CPU loops over the tensors). A ``scalar_promotion`` is none."""

    def works(name: str) -> bool:
        if "cpp_fused" in name or "triton_" in name:
            return True
        return name.startswith("aten::") and name[6:] not in KERNEL_FREE

    def under(e) -> int:
        if scalar_promotion(e):
            return 0
        if e.name.startswith("aten::_foreach_"):
            return 1
        below = sum(under(c) for c in e.cpu_children)
        if e.name in GEMMS:
            return 1 + min(below, 2)
        if below:
            return below
        return (nests or {}).get(e.name, 1) if works(e.name) else 0

    return sum(under(e) for e in events if e.cpu_parent is None)


@contextmanager
def whole_batches() -> Iterator[None]:
    """Inside: every compiled step takes its batch whole (``engine.steps.batch_parts`` gives 1),
    so that it launches the kernels a GPU's step does (the engine splits a large batch on a CPU)."""
    with mock.patch.object(steps, "batch_parts", lambda *args: 1):
        yield


def _train(run: dict, steps: int, chunk: int, mode: str | None) -> None:
    """``run`` trained ``steps`` steps on this CPU, data in chunks of ``chunk`` steps, in
    ``mode`` (None: the run's own), each batch whole as on a GPU (``whole_batches``)."""
    tc = dataclasses.replace(
        run["config"], steps=steps, log_every=steps, chunk_steps=chunk, checkpoint_every=0,
        warmup_steps=0, mode=mode or run["config"].mode,
    )  # fmt: skip
    with whole_batches():
        train(
            run["tasks"], run["params"], tc, data_seeds=run["data_seeds"], masks=run["masks"],
            no_decay=run["no_decay"], forward=run["forward"], progress=False, device="cpu",
            member_lrs=run.get("member_lrs"),
        )  # fmt: skip


def _kernels(run: dict, steps: int, chunk: int, mode: str | None, folder: str) -> tuple:
    """The kernels (``launched``) of ``_train``, inside ``kernel_profile`` (``folder``: what it
    yields): (each generated kernel as its loop nests, each generated kernel one)."""
    prof = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True
    )  # the shapes tell a scalar promotion
    with native_stderr_closed():
        prof.start()
    try:
        _train(run, steps, chunk, mode)
    finally:
        with native_stderr_closed():
            prof.stop()
    events = prof.events()
    return launched(events, generated_nests(folder)), launched(events)


@contextmanager
def native_stderr_closed():
    """File descriptor 2 sent to the null device: the profiler's native library prints a line
    at each start and stop, whatever its log level."""
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


@contextmanager
def kernel_profile():
    """Code that ``torch.compile`` generates inside this context reports its loops to the
    profiler (``cpp.enable_kernel_profile``), is compiled from scratch (inductor's caches
    off, as on a fresh machine) and written to a folder of its own (inductor's trace, its
    output code only); what was compiled before is forgotten (``torch._dynamo.reset``) on
    entry, and what was compiled inside on exit, the folder too. Yields the folder, from which
    ``generated_nests`` reads what ``launched`` counts each generated kernel as."""
    torch._dynamo.reset()
    folder = tempfile.mkdtemp(prefix="kernel-profile-")
    settings = {"cpp.enable_kernel_profile": True, "force_disable_caches": True}
    settings.update({f"trace.{k}": False for k in TRACE_OFF})
    settings.update({"trace.enabled": True, "trace.debug_dir": folder, "trace.output_code": True})
    debug_log = logging.getLogger("torch._inductor.debug")  # a line per graph traced
    level = debug_log.level
    try:
        debug_log.setLevel(logging.ERROR)
        with inductor_config.patch(settings), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "dynamo_pgo force disabled")  # what we asked
            yield folder
    finally:
        debug_log.setLevel(level)
        torch._dynamo.reset()
        shutil.rmtree(folder, ignore_errors=True)


#: what inductor's trace would write beside each graph's output code, left out
TRACE_OFF = ("fx_graph", "fx_graph_transformed", "ir_pre_fusion", "ir_post_fusion")


def generated_nests(debug_dir: str) -> dict[str, int]:
    """{profiler name: ``loop_nests``} of every CPU kernel in the code that ``torch.compile``
    wrote under ``debug_dir`` (inductor's trace: each compiled graph's ``output_code.py``, its
    kernels' C++ sources in it)."""
    out: dict[str, int] = {}
    for path in sorted(Path(debug_dir).rglob("output_code.py")):
        for source in _CPP_SOURCE.findall(path.read_text()):
            name = re.search(r'RecordFunctionHandle \w+\("([^"]+)"', source)
            if name:
                out[name.group(1)] = loop_nests(source)
    return out


#: a generated kernel's C++ source in a compiled graph's module
_CPP_SOURCE = re.compile(r"cpp_pybinding\(\[.*?\], r'{3}(.*?)'{3}\)", re.S)


def loop_nests(source: str) -> int:
    """The GPU kernels a CPU kernel that ``torch.compile`` generated stands for: its top-level
    loop nests (inside its OpenMP region, where it has one), each one kernel, and its loop-free
    blocks (scalars) together one. The CPU's code generator puts loops of other sizes, and
    loops that read what an earlier one wrote at other indices (a recurrence's steps), one
    after another in one function; a GPU kernel runs one loop nest over its grid, so each is a
    kernel of its own there."""
    start = source.find("RecordFunctionHandle")
    body = source[source.index(";", start) + 1 :] if start >= 0 else source
    blocks = _top_blocks(body if start >= 0 else body[body.index("{") + 1 :])
    if len(blocks) == 1 and "omp parallel" in blocks[0][0]:
        blocks = _top_blocks(blocks[0][1])
    loops = sum("for(" in inner for _, inner in blocks)
    scalars = any("for(" not in inner for _, inner in blocks)
    return max(loops + scalars, 1)


def _top_blocks(text: str) -> list[tuple[str, str]]:
    """The {...} blocks at the top of ``text`` (up to the brace that closes it), each as (the
    text before it, its inside)."""
    blocks, depth, last, opened = [], 0, 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                opened = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                break
            if depth == 0:
                blocks.append((text[last:opened], text[opened + 1 : i]))
                last = i + 1
    return blocks


def _flops(run: dict, steps: int, mode: str | None) -> float:
    """The FLOPs of ``_train`` (``torch.utils.flop_counter``; compiled code runs eagerly in it,
    the same arithmetic)."""
    with FlopCounterMode(display=False) as flops:
        _train(run, steps, steps, mode)
    return flops.get_total_flops()


def step_kernels(run: dict, steps: int = 1, mode: str | None = None) -> dict:
    """{"kernels", "step_kernels", "chunk_kernels", "kernels_fused", "compile_s"} of one
    steady-state step of ``run`` (a ``job_run`` result) in ``mode`` (None: the run's own),
    counted on this CPU: a step's own kernels (a run of 2k steps minus one of k, each one chunk
    of data: the drawing cancels) and those of drawing one chunk (2k steps in two chunks minus
    in one), spread over the run's ``chunk_steps``; "kernels_fused": the same with each
    generated kernel one (a GPU that fused all its loop nests: a lower estimate, where
    "kernels" counts every nest, an upper one: a GPU fuses a concatenation's pieces, or a
    reduction and what follows it, that the CPU writes as nests of their own); and the seconds
    a first run takes over the same run again (compiling from scratch, where the run compiles,
    and one-time set-up), on this CPU."""
    k = steps
    with kernel_profile() as folder:
        first, again = _seconds(run, k, mode), _seconds(run, k, mode)
        one, two = _kernels(run, k, k, mode, folder), _kernels(run, 2 * k, 2 * k, mode, folder)
        split = _kernels(run, 2 * k, k, mode, folder)
    step, chunk = (two[0] - one[0]) / k, split[0] - two[0]
    fused = (two[1] - one[1]) / k + (split[1] - two[1]) / run["config"].chunk_steps
    return {
        "kernels": step + chunk / run["config"].chunk_steps,
        "step_kernels": step,
        "chunk_kernels": chunk,
        "kernels_fused": fused,
        "compile_s": max(first - again, 0.0),
    }


def _seconds(run: dict, steps: int, mode: str | None) -> float:
    """Wall seconds of ``_train(run, steps, steps, mode)``."""
    t0 = time.perf_counter()
    _train(run, steps, steps, mode)
    return time.perf_counter() - t0


def flops_per_step(run: dict, steps: int = 1, mode: str | None = None) -> float:
    """The FLOPs of one step of ``run`` in ``mode``: a run of 2k steps minus one of k, over k."""
    return (_flops(run, 2 * steps, mode) - _flops(run, steps, mode)) / steps


def step_counts(run: dict, steps: int = 1, mode: str | None = None) -> dict:
    """``step_kernels`` and {"flops": ``flops_per_step``} together."""
    return {**step_kernels(run, steps, mode), "flops": flops_per_step(run, steps, mode)}


def bench_run(n: int, d: int = 4, T: int = 32, batch: int = 64, members: int = 1) -> dict:
    """The ``job_run`` of the GPU bench's step: ``members`` gated RNNs of n = m neurons, each on
    its own teacher of dimension d, sequences of T, ``batch`` a step (seeds as the bench draws
    them)."""
    tasks = [
        TeacherStudentTask.from_seed(d, seed=derive_seed(e, "teacher"), T=T) for e in range(members)
    ]
    students = [GatedRNN(d, n, n, seed=derive_seed(e, "student")) for e in range(members)]
    params, masks = stack_students(students)
    seeds = [derive_seed(e, "data") for e in range(members)]
    with probing():
        try:
            train(tasks, params, TrainConfig(steps=1000, batch_size=batch), data_seeds=seeds,
                  masks=masks)  # fmt: skip
        except TrainCall as call:
            return call.arguments
    raise AssertionError("unreachable: probing stops train")


def kernels_by_members(
    sizes: tuple[int, ...] = (1, 4, 16, 64),
    n: int = 28,
    modes: tuple[str, ...] = ("fast", "compiled"),
) -> list[dict]:
    """[{"members", "mode", "step", "data"}]: the kernels of one training step of ``members``
    students at the bench's config (``bench_run``) in each of ``modes``: the step's own, and
    drawing its data (a chunk's kernels over the chunk's steps). A step whose own count is flat
    costs a GPU the same launches for any ensemble. Mode "compiled" compiles once per size."""
    out = []
    for E in sizes:
        run = bench_run(n, members=E)
        for mode in modes:
            k = step_kernels(run, mode=mode)
            step = k["step_kernels"]
            out.append({"members": E, "mode": mode, "step": step, "data": k["kernels"] - step})
    return out


def calibrate(bench: dict) -> dict:
    """{"t_kernel", "peak_flops", "peak_tf32_flops", "kernels"} from a recorded GPU bench: its
    one-student step time over the kernels of the step it timed, and its matmul peak (with TF32
    products allowed too, where the bench measured it, else None). The kernels: the bench's
    own "step_kernels" (counted from the code it ran, the data drawn on the host there left
    out), else those of that step as the code counts it now (``step_kernels``)."""
    cfg = bench["config"]
    if cfg["n"] != cfg["m"]:
        raise ValueError(f"the bench's config {cfg} has n != m: not a step bench_run makes")
    kernels = bench.get("step_kernels")
    if kernels is None:
        run = bench_run(cfg["n"], cfg["d"], cfg["T"], cfg["batch"])
        kernels = step_kernels(run)["step_kernels"]
    elif not kernels > 0:
        raise ValueError(f"the recorded bench's step_kernels is {kernels!r}, not a count")
    return {
        "t_kernel": 1.0 / bench["engine_steps_per_s"] / kernels,
        "peak_flops": bench["gemm_peak_gflops"] * 1e9,
        "peak_tf32_flops": (bench.get("gemm_peak_tf32_gflops") or 0.0) * 1e9 or None,
        "kernels": kernels,
    }


def step_seconds(counts: dict, calibration: dict) -> dict:
    """{"launch", "arithmetic", "step"}: seconds of one step on the calibrated GPU."""
    launch = counts["kernels"] * calibration["t_kernel"]
    arithmetic = counts["flops"] / calibration["peak_flops"]
    return {"launch": launch, "arithmetic": arithmetic, "step": max(launch, arithmetic)}
