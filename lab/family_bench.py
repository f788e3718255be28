"""What a training step of each model family costs, at a matched parameter count.

Every family of ``models.family_registry.FAMILIES`` (the architectures of Sec. 4.3 / 5.3) at the
width
whose parameter count is closest to ``FAMILY_SETUP["target_params"]`` (``width_for``), as an
ensemble of ``E`` members, trained with ``engine.train`` on a teacher-student task (d_in =
d_out = 6, T = 8, batch 64, float32). A timing is whole training steps (data, forward,
backward, AdamW), setup included, after an untimed warm-up; the fastest of ``repeats`` runs,
the families taking turns (``bench_timing.fastest``). The gated RNN of Eq. (2) trains through
the engine's fused fast path (``forward=None``), every other family through its ``forward``.

``family_costs`` returns, per family: its width, its parameter count (one member), ms per
ensemble step and member-steps per second (E x steps per second). With ``compiled``, each family
with a form for compiled training (``Family.compiled``: LSTM, GRU, the LRUs) is timed through
it too, as
"<name>-compiled" (its compiling is in the untimed warm-up).
"""

from __future__ import annotations

import time

import torch

from gated_attention.engine import TrainConfig, resolve_device, train
from gated_attention.experiments.profiles import derive_seed
from gated_attention.models.family_registry import FAMILIES, width_for
from gated_attention.models.shell import parameter_count
from gated_attention.tasks.teacher_student import TeacherStudentTask
from lab.bench_timing import fastest

__all__ = ["FAMILY_SETUP", "FAMILY_STEPS", "family_costs"]

#: the shared setting: dimensions, sequence length, batch, ensemble size, matched count, dtype
FAMILY_SETUP = {
    "d": 6,
    "T": 8,
    "batch": 64,
    "ensemble": 3,
    "target_params": 3000,
    "dtype": "float32",
}
#: (timed steps, warm-up steps, repeats) per bench profile
FAMILY_STEPS = {"quick": (60, 5, 3), "smoke": (2, 1, 1)}


def family_timer(
    task, name: str, width: int, steps: int, warmup: int, seed: int, dev, compiled=False
):
    """(parameter count, a function timing ``steps`` training steps of family ``name`` in seconds);
    ``warmup`` untimed steps run once first; ``compiled``: through its compiled cell loop."""
    fam, s = FAMILIES[name], FAMILY_SETUP
    forward = fam.compiled if compiled else fam.forward
    E, dtype = s["ensemble"], getattr(torch, s["dtype"])
    g = torch.Generator().manual_seed(derive_seed(seed, f"student {name}"))
    params = fam.init(s["d"], s["d"], width, E, g, dtype)
    kw = dict(
        data_seeds=[derive_seed(seed + e, "data") for e in range(E)],
        forward=None if name == "gated" else forward,  # gated: the engine's fused path
        no_decay=fam.no_decay,
        progress=False,
        device=dev,
    )
    config = dict(batch_size=s["batch"], dtype=s["dtype"])
    train([task] * E, params, TrainConfig(steps=warmup, chunk_steps=warmup, **config), **kw)

    def timed() -> float:
        t0 = time.perf_counter()
        train([task] * E, params, TrainConfig(steps=steps, log_every=steps, **config), **kw)
        return time.perf_counter() - t0

    return parameter_count(params), timed


def family_costs(
    profile: str = "quick",
    seed: int = 0,
    device: str | torch.device | None = None,
    names: tuple[str, ...] | None = None,
    compiled: bool = False,
) -> dict:
    """Time training steps of every family (or of ``names``); see the module docstring.

    ``profile``: "smoke" (a couple of steps: proves the code path) or "quick" (seconds).
    ``device``: where to train (default: $GATED_ATTENTION_DEVICE, else the CPU).

    Returns {"config": the setting and the steps timed, "device", "threads", "costs": {name:
    {"label", "width", "params", "ms_per_step", "member_steps_per_s"}}}, in FAMILIES order.
    """
    kind = "smoke" if profile == "smoke" else "quick"
    steps, warmup, repeats = FAMILY_STEPS[kind]
    names = tuple(FAMILIES) if names is None else tuple(names)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown family {unknown[0]!r}; expected one of {', '.join(FAMILIES)}")
    dev = resolve_device(device)
    s = FAMILY_SETUP
    task = TeacherStudentTask.from_seed(s["d"], seed=derive_seed(seed, "teacher"), T=s["T"])
    widths = {n: width_for(FAMILIES[n], s["d"], s["d"], s["target_params"]) for n in names}
    counts, timers, labels = {}, {}, {}
    for n in names:
        counts[n], timers[n] = family_timer(task, n, widths[n], steps, warmup, seed, dev)
        labels[n] = (n, FAMILIES[n].label)
        if compiled and FAMILIES[n].compiled is not None:
            k = f"{n}-compiled"
            counts[k], timers[k] = family_timer(
                task, n, widths[n], steps, warmup, seed, dev, compiled=True
            )
            labels[k] = (n, f"{FAMILIES[n].label}, compiled form")
    best = fastest(timers, repeats)
    costs = {}
    for k, (n, label) in labels.items():
        ms = 1e3 * best[k] / steps
        costs[k] = {
            "label": label,
            "width": widths[n],
            "params": counts[k],
            "ms_per_step": ms,
            "member_steps_per_s": s["ensemble"] * 1e3 / ms,
        }
    return {
        "config": {**s, "steps": steps, "warmup": warmup, "repeats": repeats},
        "device": str(dev),
        "threads": torch.get_num_threads(),
        "costs": costs,
    }
