"""How much of a training step keeps the device busy: its kernels' time against the step's time.

``step_times`` measures a step's wall time on a GPU; the recorded H200 runs took 5x to 8x their
arithmetic at the float32 peak. Two causes read alike from the wall clock: the device idle
between kernels (the host, a launch, a synchronisation holds it), or the device busy with
kernels too small to run near the peak. This module tells them apart:

    busy_per_step(train_steps, device)
                                  the run trained ``warm`` and ``warm + steps`` steps under
                                  ``torch.profiler`` (each from its start, after a first call
                                  that compiles); the difference of the two, over ``steps``:
                                  "busy_s_per_step"   the kernels' time a step
                                  "kernels_per_step"  the kernels a step runs
                                  "busy_top"          the kernels taking the most of it,
                                                      [[name, seconds a step], ...]

Kernels (``kernel_times``): on a GPU the profiler's device events (kernels, copies and fills,
timed on the device, those a CUDA graph replays included); on a CPU the kernels that
``device_time.launched`` counts for ``gpu_plan``, their time the host's time inside operations.
A GPU whose profiler saw no device event gives None (not 0): nothing was measured.

``busy_s_per_step`` over ``step_times``' seconds a step is the fraction of the step the device
works; its rest is time the device waits. On a GPU the kernels are timed on the device, which
profiling leaves at their pace. On a CPU both are the host's, the operations timed under the
profiler, which slows each: there the fraction can pass 1 and only tells the tool works.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

import torch
from torch.autograd import DeviceType

from lab.device_time import launched, native_stderr_closed

__all__ = ["kernel_times", "busy_per_step", "format_busy"]

#: a kernel's name is cut to this many characters (generated names run to hundreds)
NAME_CHARS = 48


def _on_device(device: str) -> bool:
    return device.startswith("cuda")


def kernel_times(fn, device: str) -> tuple[int, dict[str, float]]:
    """Run ``fn()`` under ``torch.profiler``: (the kernels it ran, {name: seconds}) on
    ``device``. On a GPU: every device event, timed on the device. On a CPU: the kernels
    ``device_time.launched`` counts (so a CPU count reads as ``gpu_plan``'s), and the time
    spent inside operations, each operation's own time (its callees' left out) by name."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if _on_device(device):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    prof = torch.profiler.profile(activities=activities, record_shapes=not _on_device(device))
    with native_stderr_closed():
        prof.start()
    try:
        fn()
        if _on_device(device):
            torch.cuda.synchronize()
    finally:
        with native_stderr_closed():
            prof.stop()
    events = prof.events()
    seconds: dict[str, float] = collections.defaultdict(float)
    if _on_device(device):
        kernels = [e for e in events if e.device_type == DeviceType.CUDA]
        for e in kernels:
            seconds[e.name[:NAME_CHARS]] += e.time_range.elapsed_us() * 1e-6
        return len(kernels), dict(seconds)
    for e in events:
        if e.device_type == DeviceType.CPU and e.name.startswith("aten::"):
            seconds[e.name[:NAME_CHARS]] += e.self_cpu_time_total * 1e-6
    return launched(events), dict(seconds)


def busy_per_step(
    train_steps: Callable[[int], object], device: str, steps: int = 100, warm: int = 20,
    top: int = 6,
) -> dict:  # fmt: skip
    """{"busy_s_per_step", "kernels_per_step", "busy_top", "busy_steps"} of a run on ``device``
    (module docstring), ``train_steps(k)`` training it ``k`` steps from its start (as
    ``step_times`` does); ``busy_s_per_step`` and ``kernels_per_step`` are None where the
    profiler saw no kernel on a GPU."""
    if steps < 1 or warm < 1:
        raise ValueError(f"steps and warm must be >= 1, got {steps} and {warm}")
    train_steps(warm)  # compiles, outside the profiled calls
    n0, t0 = kernel_times(lambda: train_steps(warm), device)
    n1, t1 = kernel_times(lambda: train_steps(warm + steps), device)
    if n1 == 0:
        return {"busy_s_per_step": None, "kernels_per_step": None, "busy_top": [],
                "busy_steps": steps}  # fmt: skip
    per_step = {k: (v - t0.get(k, 0.0)) / steps for k, v in t1.items()}
    ranked = sorted(per_step.items(), key=lambda kv: -kv[1])[:top]
    return {
        "busy_s_per_step": max(sum(per_step.values()), 0.0),
        "kernels_per_step": (n1 - n0) / steps,
        "busy_top": [[k, v] for k, v in ranked],
        "busy_steps": steps,
    }


def format_busy(entries: list[dict], width: int = 76) -> str:
    """The entries that measured their busy time: a step's wall and kernel time, the kernels a
    step runs, and the kernel taking the most of it; '' where none did."""
    rows = [e for e in entries if e.get("busy_s_per_step") is not None and "s_per_step" in e]
    if not rows:
        return ""
    head = f"{'step':34s} {'ms':>6s} {'busy':>6s} {'share':>6s} {'kernels':>8s}"
    lines = [head]
    for e in rows:
        share = e["busy_s_per_step"] / e["s_per_step"]
        lines.append(
            f"{e['label'][:34]:34s} {e['s_per_step'] * 1e3:6.3f} "
            f"{e['busy_s_per_step'] * 1e3:6.3f} {share:6.0%} {e['kernels_per_step']:8.1f}"
        )
        if e["busy_top"]:
            name, s = e["busy_top"][0]
            lines.append(f"  most: {name[: width - 20]} {s * 1e3:.3f} ms")
    return "\n".join(lines)
