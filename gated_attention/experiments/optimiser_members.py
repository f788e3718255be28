"""The optimiser comparison over every recorded paper-budget member (ours, not the paper's).

``optimiser_comparison`` for (recorded run, member) pairs and *arms* (label, optimiser, constant
lr, weight decay; why: book/surplus_neurons.md): a member's arms share its start, data stream and
held-out batch; only the trajectories are stored, not the networks.

Glossary (code name -> meaning -> shape), P members, A arms, K records after step 0:
    steps       the steps of the records, 0 first                                  (K + 1,)
    counts      (hidden, lam ~ 1, lam ~ 0, output) after pruning                   (P, A, K + 1, 4)
    train_loss  mean training loss since the previous record (NaN at step 0)       (P, A, K + 1)
    held_out    loss on the member's held-out batch (float64)                      (P, A, K + 1)
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..analysis.thresholds import LAM_TOL, PRUNE_TOL
from ..engine import OPTIMISERS
from ..tasks.teacher_student import TeacherStudentTask
from .optimiser_comparison import (
    ADAM_LR,
    ADAMW_WEIGHT_DECAY,
    L2_WEIGHT_DECAY,
    continue_network,
    recorded_start,
)
from .profiles import check_profile, derive_seed
from .protocol import Experiment, Job

_CPU0, _CPU1, _GPU = (
    "teacher-identification-paper-seed0",
    "teacher-identification-paper-seed1",
    "teacher-identification-paper-gpu",
)
#: (recorded run, member index): the five recorded paper-budget members
MEMBERS = ((_CPU0, 0), (_CPU1, 0), (_GPU, 0), (_GPU, 1), (_GPU, 2))
#: the members not used to choose the L2 coefficient
HELD_OUT = ((_GPU, 0), (_GPU, 1), (_GPU, 2))
#: the recorded run of new seeds (3-7, never used to choose anything): Fig. 2's CPU budget
NEW_SEEDS_RUN = "teacher-identification-cpu"
#: its five members, every one held out
NEW_SEED_MEMBERS = tuple((NEW_SEEDS_RUN, k) for k in range(5))
#: AdamW's stronger decoupled decay: lr x wd x PAPER_STEPS = 8
STRONG_WEIGHT_DECAY = 0.2
#: (arm, optimiser, constant lr, weight decay): AdamW as trained, AdamW stronger, Adam + L2
ARMS = (
    ("adamw", "adamw", ADAM_LR, ADAMW_WEIGHT_DECAY),
    ("adamw_strong", "adamw", ADAM_LR, STRONG_WEIGHT_DECAY),
    ("adam_l2", "adam_l2", ADAM_LR, L2_WEIGHT_DECAY),
)
#: steps per arm and member of the paper profile
PAPER_STEPS = 40_000


@dataclass(frozen=True)
class OptimiserMembersConfig(Experiment):
    """Continue each of ``members`` with each of ``arms`` for ``steps`` steps.

    held_out  the members not used to choose any arm's values (a subset)
    arms      (label, optimiser, constant lr, weight decay) rows; the weight decay as in
              ``OptimiserComparisonConfig``
    seed      the data streams and held-out batches (one of each per member, shared by its arms)
    """

    name: str = "optimiser-comparison-members"
    members: tuple[tuple[str, int], ...] = MEMBERS
    held_out: tuple[tuple[str, int], ...] = HELD_OUT
    arms: tuple[tuple[str, str, float, float], ...] = ARMS
    steps: int = PAPER_STEPS
    T: int = 8
    batch_size: int = 64
    counts_every: int = 1000
    prune_tol: float = PRUNE_TOL
    lam_tol: float = LAM_TOL
    eval_batch: int = 1024
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.members:
            raise ValueError("members must name at least one (recorded run, member) pair")
        for pair in self.members:
            ok = isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)
            if not (ok and isinstance(pair[1], int) and pair[1] >= 0):
                raise ValueError(f"a member is a (recorded run, member index >= 0) pair: {pair!r}")
        if len(set(self.members)) != len(self.members):
            raise ValueError(f"members repeat a pair: {self.members}")
        stray = [p for p in self.held_out if p not in self.members]
        if stray:
            raise ValueError(f"held_out names pairs that are not members: {stray}")
        if not self.arms:
            raise ValueError("arms must give at least one (label, optimiser, lr, wd) row")
        labels = [a[0] for a in self.arms]
        if len(set(labels)) != len(labels):
            raise ValueError(f"arm labels repeat: {labels}")
        for arm in self.arms:
            if len(arm) != 4:
                raise ValueError(f"an arm is (label, optimiser, lr, wd), got {arm!r}")
            label, opt, lr, wd = arm
            if opt not in OPTIMISERS:
                raise ValueError(f"arm {label!r}: unknown optimiser {opt!r}; one of {OPTIMISERS}")
            for what, v in (("lr", lr), ("weight decay", wd)):
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                    raise ValueError(f"arm {label!r}: {what} must be a number >= 0, got {v!r}")
        for k in ("steps", "T", "batch_size", "counts_every", "eval_batch"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{k} must be a positive integer, got {v!r}")

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(a[0] for a in self.arms)

    def arm(self, label: str) -> tuple[str, float, float]:
        """(optimiser, lr, weight decay) of the arm ``label``."""
        for name, opt, lr, wd in self.arms:
            if name == label:
                return opt, float(lr), float(wd)
        raise KeyError(f"no arm {label!r}; arms: {self.labels}")

    def decay_budget(self, label: str) -> float:
        """lr x weight decay x steps of the arm ``label``."""
        _, lr, wd = self.arm(label)
        return lr * wd * self.steps

    def jobs(self, device: str = "cpu") -> list[Job]:
        """One job per member: its arms, one after another."""
        return [
            Job(key=f"member-{k}", label=f"{run} member {member}", part=k)
            for k, (run, member) in enumerate(self.members)
        ]

    def train_job(self, job: Job, *, checkpoint: Path | None = None, progress: bool = True):
        """Every arm of one member (``continue_network``; minutes: no checkpoints)."""
        run, member = self.members[int(job.part)]
        start, teacher, removed = recorded_start(run, member)
        task = TeacherStudentTask(teacher, T=self.T)
        seeds = [
            derive_seed(self.seed, f"optimiser-members-{s}/{run}/{member}")
            for s in ("data", "eval")
        ]
        rows, t0 = [], time.perf_counter()
        for label in self.labels:
            opt, lr, wd = self.arm(label)
            rows.append(continue_network(start, task, opt, lr, wd, self, *seeds))
            if progress:
                c = rows[-1]["counts"][-1].tolist()
                print(f"{run} member {member}, {label}: end counts {c}", flush=True)
        wall = time.perf_counter() - t0
        stacked = {
            k: torch.stack([r[k] for r in rows]) for k in ("counts", "train_loss", "held_out")
        }
        return {"steps": rows[0]["steps"], **stacked, "removed": removed, "wall_time": wall}

    def assemble(self, jobs: list[Job], outputs: list[dict]):
        """The members' trajectories stacked (P, A, ...)."""
        tensors = {
            "steps": outputs[0]["steps"],
            **{
                k: torch.stack([o[k] for o in outputs])
                for k in ("counts", "train_loss", "held_out")
            },
        }
        metrics = {
            "removed_max_abs": [float(o["removed"]) for o in outputs],
            "wall_time_s_per_member": [float(o["wall_time"]) for o in outputs],
        }
        return tensors, metrics


def optimiser_members_config(profile: str) -> OptimiserMembersConfig:
    """The five-member optimiser comparison of the teacher-identification chapter, per profile.

    smoke   two members (seed0; gpu seed 0, held out), 20 steps, counts every 10.
    quick   all five members, 10,000 steps, counts every 500.
    paper   all five members, PAPER_STEPS steps per arm, counts every 1,000.
    """
    check_profile(profile)
    base = OptimiserMembersConfig()
    if profile == "smoke":
        two = (MEMBERS[0], MEMBERS[2])
        return dataclasses.replace(
            base, members=two, held_out=two[1:], steps=20, counts_every=10, eval_batch=64
        )
    if profile == "quick":
        return dataclasses.replace(base, steps=10_000, counts_every=500)
    return base


def optimiser_new_seeds_config(profile: str) -> OptimiserMembersConfig:
    """``optimiser_members_config(profile)`` on the five members of ``NEW_SEEDS_RUN`` (seeds
    3-7, n = m = 48, T = 8), none used to choose anything nor a twin of one that was: every one
    held out and independent (smoke: one member)."""
    base = dataclasses.replace(
        optimiser_members_config(profile),
        name="optimiser-comparison-new-seeds",
        members=NEW_SEED_MEMBERS,
        held_out=NEW_SEED_MEMBERS,
    )
    if profile == "smoke":
        one = NEW_SEED_MEMBERS[:1]
        return dataclasses.replace(base, members=one, held_out=one)
    return base
