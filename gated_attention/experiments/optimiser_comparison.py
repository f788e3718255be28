"""Continuing a recorded teacher-identification network with three optimisers (ours, not the
paper's): does the optimiser decide whether the surplus neurons survive?

The recorded paper-profile students (Sec. 4.1) keep more hidden neurons than the construction's
14; ``analysis.consolidation`` builds a 14-neuron network that computes nearly the same
function with a smaller (balanced) weight penalty, so the surplus is no minimum of
"loss + wd/2 |theta|^2" (up to that small change of the function). AdamW's decoupled weight
decay minimises no such objective: its fixed points solve m/sqrt(v) = -wd theta (Adam's
normalised gradient against the decay), not grad L = -wd theta. This experiment continues one
trained member with

    "adamw"    AdamW, decoupled weight decay: theta <- theta (1 - lr wd) - lr m/(sqrt(v) + eps)
               (as the network was trained);
    "adam_l2"  Adam with the L2 penalty in the gradient (torch.optim.Adam(weight_decay=wd)):
               g <- grad L + wd theta, then Adam's update; its fixed points are those of
               L + wd/2 |theta|^2;
    "sgd_l2"   plain SGD (no momentum) with the same L2 term: gradient descent on
               L + wd/2 |theta|^2;

each with a constant learning rate (no schedule: the recorded runs ended their cosine at 1e-6;
a constant rate lets the three run for the same steps at a fixed strength), its own weight
decay (AdamW's as trained; the L2 coefficient far smaller: the pilots below), no weight decay
on nu (as the paper), the same data stream for all three (one generator seeded from ``seed``),
float32, the engine's fused Eq. (2) and loss (``fast_path.fused_loss``). Every ``counts_every``
steps the run prunes a float64 copy (``analysis.prune`` at ``prune_tol``) and counts the hidden
neurons, those with lam ~ 1 and lam ~ 0 (``analysis.lam_groups`` at ``lam_tol``) and the output
neurons, and records the mean training loss of the steps since the last record.

What is continued: the member's network with its exactly dead neurons removed first
(``analysis.prune`` with tol 0). In the recorded runs every weight of those neurons is exactly
0.0, and a neuron whose weights are all zero gets exactly zero gradient and stays exactly zero
under all three optimisers (L2 and decay of 0 are 0): continuing the pruned network is the same
computation as continuing the full one, several times cheaper (``metrics["removed_max_abs"]``
records the largest removed weight, 0.0 when exact).

T: the network is T-agnostic (Eq. 2 has no parameter that depends on T, and the construction is
exact for every T), so the runs continue at T = 8 instead of the recorded 32: a step costs about a
quarter. The held-out loss at the end is measured at the same T on ``eval_batch`` fresh
sequences (float64).

Learning rates and weight decays (ours; pilots on member 0 of teacher-identification-paper-seed0,
continued at T = 8, batch 64, counts after pruning at 1e-3 as (hidden, lam~1, lam~0, output),
starting from (27, 11, 16, 11); 2-core CPU, one thread):

    AdamW, weight decay 0.07 (the trained value): lr 1e-3 kept (27, 11, 16, 11) for 2,000 steps
        (train loss ~1e-6, held-out 3e-8); lr 1e-2 (the recorded runs' peak) kept it for 8,000.
    The same L2 coefficient 0.07 in the gradient is another objective: Adam-L2 (lr 1e-3) and
        SGD-L2 (lr 0.1) both collapsed the network to nothing within 1,000 steps (loss 0.1, the
        teacher's variance at T = 8): at this coefficient the minimum of L + wd/2 |theta|^2 is
        the zero network. The L2 coefficient must be far smaller for the task to survive.
    Adam-L2, lr 1e-3: wd 1e-3 and 3e-3 cut the network below the construction (9 and 8 hidden,
        loss 5e-4 and 2e-3); wd 1e-4 reached exactly (14, 10, 4, 11) after 4,000 steps (loss
        1e-5), but on seed 1's recorded network it cut the key-value group to 9; wd 3e-5 reached
        (14, 10, 4, 11) after 6,000 steps (loss 2e-6) and took seed 1's from 37 to 22 hidden in
        16,000 steps, still falling. L2_WEIGHT_DECAY = 3e-5.
    SGD-L2 (no momentum) at wd 0: lr 0.1 kept the loss at its start (1e-12 training loss: the
        raw gradient hardly moves the network), lr 0.3 spiked to 3e-4 before settling, lr 1 and
        above diverged. SGD_LR = 0.1. SGD moves along the loss-flat directions that copies
        open at the rate lr x wd per step: at wd 1e-4, 1e-3 and 3e-3 its counts did not change
        in 8,000 steps (lr x wd x steps 0.08 to 2.4), while wd 1e-3 and 3e-3 already raised
        the loss to 3e-4 and 2.5e-3. So SGD-L2 is the slow control: the same objective as
        Adam-L2, plain gradient descent; in the quick budget it is not expected to move the
        counts.
    At these settings for 12,000 steps on all five recorded members
        (seed0; seed1; gpu seeds 0, 1, 2): AdamW kept every count of every member; SGD-L2 kept
        them too (lr x wd x steps = 0.036); Adam-L2 reached exactly 14 = 10 + 4 hidden on
        seed0 and gpu seeds 0 and 2 (after 5,700 to 10,200 steps) and took seed1 and gpu seed 1
        from 37 to 24 and 23; continued for 40,000 steps these two reached 14 = 10 + 4 as well
        (after 32,000 and 22,000), at training losses of 2e-6 to 8e-6.
    Control: AdamW at lr 1e-3 with a decoupled decay of 0.2 and 0.5 (3 and 7 times the trained
        value; lr x wd x steps = 2.4 and 6) kept (27, 11, 16, 11) for 12,000 steps as well.
    Timing: 3 x 12,000 steps took 32 s to 62 s on the 2-core CPU of the pilots, shared with
        other work (load 3 to 8; one step 1.0 to 1.5 ms). The quick profile takes 10,000 steps
        per optimiser: under a minute even on that loaded machine, and Adam-L2 reached the
        construction's counts after 5,500 to 5,700 steps on its member.

Glossary (code name -> meaning -> shape):
    counts      per optimiser: (hidden, lam ~ 1, lam ~ 0, output) after pruning  (K + 1, 4)
    steps       the steps at which counts and losses are recorded, 0 first        (K + 1,)
    train_loss  mean training loss since the previous record (NaN at step 0)      (K + 1,)
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..engine import unstack_students
from ..engine.data import sample_chunk_neuron_major
from ..engine.device import flush_denormals
from ..models.fast_path import fused_loss, gated_rnn_fast, pack_params, unpack_params
from ..tasks.teacher_student import TeacherStudentTask
from .cache import RECORDED_ROOT, read_entry, rebuild_config
from .profiles import check_profile, derive_seed
from .teacher_student import TeacherStudentConfig

__all__ = [
    "OPTIMISERS",
    "COUNT_NAMES",
    "ADAM_LR",
    "SGD_LR",
    "ADAMW_WEIGHT_DECAY",
    "L2_WEIGHT_DECAY",
    "QUICK_STEPS",
    "PAPER_STEPS",
    "OptimiserComparisonConfig",
    "optimiser_comparison_config",
]

OPTIMISERS = ("adamw", "adam_l2", "sgd_l2")
#: the columns of a counts trajectory
COUNT_NAMES = ("hidden", "lam~1", "lam~0", "output")
#: the constant learning rates and weight decays of every profile (the module docstring's pilots)
ADAM_LR, SGD_LR = 1e-3, 0.1
#: AdamW's decoupled decay as trained (experiments.teacher_identification.WEIGHT_DECAY) and the
#: L2 coefficient of "adam_l2" and "sgd_l2" (the same objective L + wd/2 |theta|^2 for both)
ADAMW_WEIGHT_DECAY, L2_WEIGHT_DECAY = 0.07, 3e-5
#: steps per optimiser of the quick and paper profiles
QUICK_STEPS, PAPER_STEPS = 10_000, 1_000_000


@dataclass(frozen=True)
class OptimiserComparisonConfig:
    """Continue member ``member`` of the recorded run ``run`` with each of ``optimisers``.

    ``lrs``: (optimiser, constant learning rate) pairs, one per optimiser. ``weight_decays``:
    (optimiser, value) pairs: the decoupled decay of "adamw", the L2 coefficient of "adam_l2"
    and "sgd_l2" (on every parameter but nu). ``T``: the sequence length of the continued
    training (the network is T-agnostic). ``counts_every``: record counts and the training
    loss every this many steps.
    ``seed``: the data stream (the same for every optimiser) and the held-out batch.
    """

    name: str = "optimiser-comparison"
    run: str = "teacher-identification-paper-seed0"
    member: int = 0
    optimisers: tuple[str, ...] = OPTIMISERS
    lrs: tuple[tuple[str, float], ...] = (
        ("adamw", ADAM_LR),
        ("adam_l2", ADAM_LR),
        ("sgd_l2", SGD_LR),
    )
    weight_decays: tuple[tuple[str, float], ...] = (
        ("adamw", ADAMW_WEIGHT_DECAY),
        ("adam_l2", L2_WEIGHT_DECAY),
        ("sgd_l2", L2_WEIGHT_DECAY),
    )
    steps: int = 1000
    T: int = 8
    batch_size: int = 64
    counts_every: int = 100
    prune_tol: float = 1e-3
    lam_tol: float = 0.01
    eval_batch: int = 1024
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.optimisers:
            raise ValueError("optimisers must name at least one optimiser")
        unknown = [o for o in self.optimisers if o not in OPTIMISERS]
        if unknown:
            raise ValueError(f"unknown optimiser(s) {unknown}; expected some of {OPTIMISERS}")
        for field_name in ("lrs", "weight_decays"):
            table = dict(getattr(self, field_name))
            missing = [o for o in self.optimisers if o not in table]
            if missing:
                raise ValueError(f"{field_name} gives no value for {missing}")
            if any(not (isinstance(v, (int, float)) and v >= 0) for v in table.values()):
                raise ValueError(f"{field_name} must be non-negative numbers, got {table}")
        for k in ("steps", "T", "batch_size", "counts_every", "eval_batch"):
            v = getattr(self, k)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{k} must be a positive integer, got {v!r}")

    def lr(self, optimiser: str) -> float:
        return float(dict(self.lrs)[optimiser])

    def weight_decay(self, optimiser: str) -> float:
        return float(dict(self.weight_decays)[optimiser])

    def start(self):
        """(start network as a float64 parameter dict, teacher, largest removed weight)."""
        from ..analysis import as_params, prune

        path = RECORDED_ROOT / self.run
        if not (path / "manifest.json").exists():
            raise ValueError(f"no recorded run {self.run!r} in {RECORDED_ROOT}")
        meta, tensors = read_entry(path)  # the recorded_runs loader, without its registry
        if meta["config"]["type"] != TeacherStudentConfig.__qualname__:
            raise ValueError(f"{self.run} is not a teacher-student run: {meta['config']['type']}")
        rec_config = rebuild_config(TeacherStudentConfig, meta["config"]["fields"])
        seeds = tensors["seeds"].tolist()
        if not 0 <= self.member < len(seeds):
            raise ValueError(f"member {self.member} out of range: {self.run} has {len(seeds)}")
        sizes = [tuple(s) for s in tensors["sizes"].tolist()]
        full = as_params(unstack_students(tensors["params"], sizes)[self.member])
        pr = prune(full, 0.0)  # exactly dead neurons only (module docstring)
        removed_h = sorted(set(range(full["nu"].shape[0])) - set(pr.hidden))
        removed_o = sorted(set(range(full["W_out1"].shape[0])) - set(pr.output))
        parts = [full["W_in1"][removed_h], full["W_in2"][removed_h], full["W_out1"][:, removed_h]]
        parts += [full["W_out1"][removed_o], full["W_out2"][removed_o], full["D"][:, removed_o]]
        removed = max((float(t.abs().max()) for t in parts if t.numel()), default=0.0)
        teacher = rec_config.task(int(seeds[self.member])).teacher
        return pr.params, teacher, removed

    def compute(self, *, checkpoint: Path | None = None, progress: bool = True):
        """Run every optimiser from the same start; (tensors, metrics) for the results cache.

        ``checkpoint`` is not used: each optimiser's run is short (minutes at most).
        """
        flush_denormals()
        start, teacher, removed = self.start()
        task = TeacherStudentTask(teacher, T=self.T)
        tensors: dict = {"start": start}
        metrics: dict = {"removed_max_abs": removed, "wall_time_s": {}, "eval_loss": {}}
        for opt_name in self.optimisers:
            t0 = time.perf_counter()
            out = _continue(self, opt_name, start, task)
            metrics["wall_time_s"][opt_name] = time.perf_counter() - t0
            metrics["eval_loss"][opt_name] = float(out["eval_loss"])
            metrics.setdefault("final_counts", {})[opt_name] = out["counts"][-1].tolist()
            tensors["steps"] = out.pop("steps")
            tensors[opt_name] = out
        metrics["start_counts"] = tensors[self.optimisers[0]]["counts"][0].tolist()
        return tensors, metrics


def _counts(packed: dict, config: OptimiserComparisonConfig) -> list[int]:
    """(hidden, lam ~ 1, lam ~ 0, output) of the pruned network."""
    from ..analysis import lam_groups, prune

    p = {k: v[0].detach().to(torch.float64) for k, v in unpack_params(packed).items()}
    try:
        pr = prune(p, config.prune_tol)
    except ValueError:  # pruning removes everything: the network computes ~0
        return [0, 0, 0, 0]
    c = lam_groups(pr.rnn, config.lam_tol).counts()
    return [pr.rnn.n, c["one"], c["zero"], pr.rnn.m]


def _optimiser(name: str, P: dict, lr: float, wd: float) -> torch.optim.Optimizer:
    """The optimiser ``name`` on the packed parameters P, no weight decay on nu."""
    groups = [
        {"params": [P[k] for k in P if k != "nu"], "weight_decay": wd},
        {"params": [P["nu"]], "weight_decay": 0.0},
    ]
    if name == "adamw":
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    if name == "adam_l2":
        return torch.optim.Adam(groups, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    if name == "sgd_l2":
        return torch.optim.SGD(groups, lr=lr, momentum=0.0)
    raise ValueError(f"unknown optimiser {name!r}; expected one of {OPTIMISERS}")


def _continue(config: OptimiserComparisonConfig, name: str, start: dict, task) -> dict:
    """One optimiser's run; returns steps, counts, train_loss, params, eval_loss."""
    c = config
    P = {
        k: v[None].to(torch.float32).clone().requires_grad_(True)
        for k, v in pack_params(start).items()
    }
    opt = _optimiser(name, P, c.lr(name), c.weight_decay(name))
    gen = torch.Generator().manual_seed(derive_seed(c.seed, "optimiser-comparison-data"))
    steps, counts, losses = [0], [_counts(P, c)], [float("nan")]
    step = 0
    while step < c.steps:
        k = min(c.counts_every, c.steps - step)
        X, Y = sample_chunk_neuron_major([task], [gen], k, c.batch_size, torch.float32)
        window = torch.zeros((), dtype=torch.float64)
        for i in range(k):
            loss = fused_loss(X[i], P, Y[i], c.T, None)
            loss.sum().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            window += loss.detach().sum().to(torch.float64)
        step += k
        steps.append(step)
        counts.append(_counts(P, c))
        losses.append(float(window) / k)
    final = {k: v.detach()[0].to(torch.float64) for k, v in unpack_params(P).items()}
    g = torch.Generator().manual_seed(derive_seed(c.seed, "optimiser-comparison-eval"))
    x, y = task.sample(c.eval_batch, g)
    with torch.no_grad():
        y_hat = gated_rnn_fast(x[None], {k: v[None] for k, v in final.items()})[0]
    return {
        "steps": torch.tensor(steps, dtype=torch.long),
        "counts": torch.tensor(counts, dtype=torch.long),
        "train_loss": torch.tensor(losses, dtype=torch.float64),
        "params": final,
        "eval_loss": (y_hat - y).square().mean(),
    }


def optimiser_comparison_config(profile: str) -> OptimiserComparisonConfig:
    """The optimiser comparison of the teacher-identification chapter, per profile.

    smoke   20 steps, counts every 10: proves the code path.
    quick   member 0 of teacher-identification-paper-seed0, QUICK_STEPS steps per optimiser,
            counts every QUICK_STEPS / 40 (under a minute of a 2-core CPU for all three).
    paper   PAPER_STEPS steps per optimiser (SGD-L2's lr x wd x steps = 3), counts every 5,000.
    """
    check_profile(profile)
    base = OptimiserComparisonConfig()
    if profile == "smoke":
        return dataclasses.replace(base, steps=20, counts_every=10, eval_batch=64)
    if profile == "quick":
        return dataclasses.replace(base, steps=QUICK_STEPS, counts_every=QUICK_STEPS // 40)
    return dataclasses.replace(base, steps=PAPER_STEPS, counts_every=5000)
