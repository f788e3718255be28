"""Continuing a recorded teacher-identification network with three optimisers (ours, not the
paper's): does the optimiser decide whether the surplus neurons survive? Why:
book/surplus_neurons.md ("The optimiser"); the five-member version is ``optimiser_members``.

    "adamw"    AdamW, decoupled weight decay: theta <- theta (1 - lr wd) - lr m/(sqrt(v) + eps)
               (as the network was trained); fixed points m/sqrt(v) = -wd theta
    "adam_l2"  Adam with the L2 penalty in the gradient (torch.optim.Adam(weight_decay=wd)):
               g <- grad L + wd theta; fixed points those of L + wd/2 |theta|^2
    "sgd_l2"   plain SGD (no momentum) with the same L2 term: gradient descent on it

Each starts from the member with its exactly dead neurons removed (their weights are 0.0 and stay
so: the same as continuing the full network), at T = 8 (Eq. 2 has no parameter that depends on
T). SGD's lr 0.1 (ours) is the largest that does not spike the loss.

Glossary (code name -> meaning -> shape):
    counts      per optimiser: (hidden, lam ~ 1, lam ~ 0, output) after pruning  (K + 1, 4)
    steps       the steps at which counts and losses are recorded, 0 first        (K + 1,)
    train_loss  mean training loss since the previous record (NaN at step 0)      (K + 1,)
    held_out    loss on a fixed batch of ``eval_batch`` held-out sequences (float64) (K + 1,)
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..analysis.thresholds import LAM_TOL, PRUNE_TOL
from ..engine import OPTIMISERS, TrainConfig, train, unstack_students
from ..models.fast_path import gated_rnn_fast
from ..tasks.teacher_student import TeacherStudentTask
from .cache import RECORDED_ROOT, read_entry, rebuild_config
from .profiles import check_profile, derive_seed
from .protocol import Experiment, Job
from .teacher_student import TeacherStudentConfig

COUNT_NAMES = ("hidden", "lam~1", "lam~0", "output")
#: the constant learning rates of every profile (ours)
ADAM_LR, SGD_LR = 1e-3, 0.1
#: AdamW's decoupled decay as trained (``teacher_identification.WEIGHT_DECAY``) and the L2
#: coefficient of "adam_l2" and "sgd_l2", chosen on member 0 of teacher-identification-paper-seed0
#: and -seed1 (at 0.07 the minimum of L + wd/2 |theta|^2 is the zero network)
ADAMW_WEIGHT_DECAY, L2_WEIGHT_DECAY = 0.07, 3e-5
#: steps per optimiser of the quick and paper profiles
QUICK_STEPS, PAPER_STEPS = 10_000, 1_000_000


@dataclass(frozen=True)
class OptimiserComparisonConfig(Experiment):
    """Continue member ``member`` of the recorded run ``run`` with each of ``optimisers``.

    weight_decays  the decoupled decay of "adamw", the L2 coefficient of "adam_l2" and "sgd_l2"
                   (never on nu)
    seed           the data stream (shared by every optimiser) and the held-out batch
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
    prune_tol: float = PRUNE_TOL
    lam_tol: float = LAM_TOL
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

    def jobs(self, device: str = "cpu") -> list[Job]:
        """One job per optimiser."""
        return [Job(key=f"optimiser-{o}", label=f"optimiser {o}", part=o) for o in self.optimisers]

    def train_job(self, job: Job, *, checkpoint: Path | None = None, progress: bool = True):
        """One optimiser's continued run (``continue_network``; short: no checkpoints)."""
        name = str(job.part)
        start, teacher, removed = recorded_start(self.run, self.member)
        t0 = time.perf_counter()
        seeds = [derive_seed(self.seed, f"optimiser-comparison-{s}") for s in ("data", "eval")]
        task = TeacherStudentTask(teacher, T=self.T)
        lr, wd = float(dict(self.lrs)[name]), float(dict(self.weight_decays)[name])
        out = continue_network(start, task, name, lr, wd, self, *seeds)
        out["wall_time_s"] = time.perf_counter() - t0
        out["start"], out["removed"] = start, removed
        return out

    def assemble(self, jobs: list[Job], outputs: list[dict]):
        """``tensors[optimiser]``: the records (module glossary); ``tensors["start"]``."""
        tensors: dict = {"start": outputs[0]["start"]}
        metrics: dict = {"removed_max_abs": outputs[0]["removed"]}
        metrics.update(wall_time_s={}, eval_loss={}, final_counts={})
        for job, out in zip(jobs, outputs, strict=True):
            name, out = str(job.part), dict(out)
            metrics["wall_time_s"][name] = float(out.pop("wall_time_s"))
            out.pop("start"), out.pop("removed")
            metrics["eval_loss"][name] = float(out["eval_loss"])
            metrics["final_counts"][name] = out["counts"][-1].tolist()
            tensors["steps"] = out.pop("steps")
            tensors[name] = out
        metrics["start_counts"] = tensors[self.optimisers[0]]["counts"][0].tolist()
        return tensors, metrics


def recorded_start(run: str, member: int):
    """Member ``member`` of the recorded teacher-student run ``run`` with its exactly dead
    neurons removed: (float64 parameter dict, teacher, largest removed weight)."""
    from ..analysis import network, prune

    path = RECORDED_ROOT / run
    if not (path / "manifest.json").exists():
        raise ValueError(f"no recorded run {run!r} in {RECORDED_ROOT}")
    meta, tensors = read_entry(path)  # the recorded_runs loader, without its registry
    if meta["config"]["type"] != TeacherStudentConfig.__qualname__:
        raise ValueError(f"{run} is not a teacher-student run: {meta['config']['type']}")
    rec_config = rebuild_config(TeacherStudentConfig, meta["config"]["fields"])
    seeds = tensors["seeds"].tolist()
    if not 0 <= member < len(seeds):
        raise ValueError(f"member {member} out of range: {run} has {len(seeds)}")
    full = network(unstack_students(tensors["params"], tensors["sizes"].tolist())[member])
    pr = prune(full, 0.0)  # exactly dead neurons only (module docstring)
    removed_h = sorted(set(range(full.n)) - set(pr.hidden))
    removed_o = sorted(set(range(full.m)) - set(pr.output))
    parts = [full.W_in1[removed_h], full.W_in2[removed_h], full.W_out1[:, removed_h]]
    parts += [full.W_out1[removed_o], full.W_out2[removed_o], full.D[:, removed_o]]
    removed = max((float(t.abs().max()) for t in parts if t.numel()), default=0.0)
    teacher = rec_config.task(int(seeds[member])).teacher
    return pr.net.params, teacher, removed


def _counts(params: dict, prune_tol: float, lam_tol: float) -> list[int]:
    """COUNT_NAMES of the pruned network (params: (1, ...)); non-finite weights: a ValueError."""
    from ..analysis import lam_groups, network, prune

    net = network({k: v[0].detach().to(torch.float64) for k, v in params.items()})
    try:
        pr = prune(net, prune_tol)
    except ValueError:  # pruning removes everything: the network computes ~0
        return [0, 0, 0, 0]
    c = lam_groups(pr.net, lam_tol).counts()
    return [pr.net.n, c["one"], c["zero"], pr.net.m]


def continue_network(
    start: dict, task, name: str, lr: float, wd: float, c, data_seed: int, eval_seed: int
) -> dict:
    """Train ``start`` (float64 parameter dict) further with optimiser ``name`` at the constant
    ``lr`` and weight decay ``wd`` (float32, no decay on nu), recording every ``c.counts_every``
    steps (``c``: a config of this module or ``optimiser_members``); returns the records of the
    module glossary, params (float64 dict) and eval_loss (the last held_out)."""
    tc = TrainConfig(
        steps=c.steps,
        batch_size=c.batch_size,
        lr=lr,
        weight_decay=wd,
        optimiser=name,
        schedule="constant",
        log_every=c.counts_every,
        chunk_steps=c.counts_every,
    )
    x_eval, y_eval = task.sample(c.eval_batch, torch.Generator().manual_seed(eval_seed))

    def held_out(params: dict) -> float:
        p = {k: v.detach().to(torch.float64) for k, v in params.items()}
        with torch.no_grad():
            return float((gated_rnn_fast(x_eval[None], p)[0] - y_eval).square().mean())

    P0 = {k: v[None] for k, v in start.items()}
    counts, evals = [_counts(P0, c.prune_tol, c.lam_tol)], [held_out(P0)]

    def record(step: int, params: dict) -> None:
        counts.append(_counts(params, c.prune_tol, c.lam_tol))
        evals.append(held_out(params))

    res = train([task], P0, tc, data_seeds=[data_seed], progress=False, on_log=record)
    final = {k: v[0].to(torch.float64) for k, v in res.params.items()}
    losses = [float("nan"), *res.losses[:, 0].tolist()]
    return {
        "steps": torch.cat([torch.zeros(1, dtype=torch.long), res.loss_steps]),
        "counts": torch.tensor(counts, dtype=torch.long),
        "train_loss": torch.tensor(losses, dtype=torch.float64),
        "held_out": torch.tensor(evals, dtype=torch.float64),
        "params": final,
        "eval_loss": torch.tensor(evals[-1], dtype=torch.float64),
    }


def optimiser_comparison_config(profile: str) -> OptimiserComparisonConfig:
    """The single-member optimiser comparison (with SGD + L2), per profile; the chapter shows the
    five-member ``optimiser_members`` instead.

    smoke   20 steps, counts every 10: proves the code path.
    quick   member 0 of teacher-identification-paper-seed0, QUICK_STEPS steps per optimiser,
            counts every QUICK_STEPS / 40.
    paper   PAPER_STEPS steps per optimiser (SGD-L2's lr x wd x steps = 3), counts every 5,000.
    """
    check_profile(profile)
    base = OptimiserComparisonConfig()
    if profile == "smoke":
        return dataclasses.replace(base, steps=20, counts_every=10, eval_batch=64)
    if profile == "quick":
        return dataclasses.replace(base, steps=QUICK_STEPS, counts_every=QUICK_STEPS // 40)
    return dataclasses.replace(base, steps=PAPER_STEPS, counts_every=5000)
