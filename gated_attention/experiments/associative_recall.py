"""Associative recall as an experiment (App. D.3, Fig. 7): gated RNNs with input-output and with
side gating, several sizes and seeds, trained on ``tasks.associative_recall.AssociativeRecall``
and scored (loss and accuracy) on the same held-out sequences; one job per gating.

Glossary (code name -> meaning -> section):
    RecallConfig             the experiment: gatings, sizes n (= m), seeds, the optimiser  App. D.3
    GATINGS                  "io": Eq. (2) with output gating; "side": App. A.2's side gate;
                             "io-ce": "io" trained with the paper's cross-entropy at the query
                             step instead of the engine's MSE (our ablation)
    associative_recall_config  its profiles
    prune_budget_config      side gating at a decay budget that prunes (ours)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
import torch.nn.functional as F

from ..engine import TrainConfig, train_by_size, unstack_students
from ..models.gated_rnn import GatedRNN, gated_rnn_forward
from ..tasks.associative_recall import AssociativeRecall, RecallBatch, query_mse
from .profiles import check_profile, derive_seed
from .protocol import Experiment, Job

GATINGS = ("io", "side", "io-ce")


@dataclass(frozen=True)
class RecallConfig(Experiment):
    """Training gated RNNs on associative recall (App. D.3), for ``experiments.run``.

    Per gating, members (seed, n) train together (``engine.train_by_size``): n hidden and m = n
    output-gating neurons ("side": m = 0); "io-ce" uses ``ce_sizes``, ``ce_train`` and the
    initial networks of "io"; a seed's data stream is shared by all gatings.
    Ours (why: book/associative_recall.md): weights N(0, 1/fan_in), lam ~ U(lam_range), ``train``
    with learning rate x weight decay x steps about 10.
    """

    name: str = "associative-recall"
    task: AssociativeRecall = AssociativeRecall()
    sizes: tuple[int, ...] = (32,)
    seeds: tuple[int, ...] = (0,)
    gatings: tuple[str, ...] = GATINGS
    lam_range: tuple[float, float] = (0.0, 1.0)
    eval_batch: int = 4096
    train: TrainConfig = field(default_factory=lambda: TrainConfig(steps=100_000))
    ce_sizes: tuple[int, ...] = (6, 32)
    ce_train: TrainConfig = field(default_factory=lambda: TrainConfig(steps=10_000))

    def __post_init__(self) -> None:
        if not self.seeds or not self.sizes or not self.gatings:
            raise ValueError("seeds, sizes and gatings must each name at least one value")
        for k in (*self.sizes, *self.ce_sizes):
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise ValueError(f"sizes must be positive integers, got {k!r}")
        unknown = [g for g in self.gatings if g not in GATINGS]
        if unknown or len(set(self.gatings)) != len(self.gatings):
            raise ValueError(f"gatings must be distinct names among {GATINGS}, got {self.gatings}")
        if not isinstance(self.task, AssociativeRecall):
            raise TypeError(f"task must be an AssociativeRecall, got {type(self.task).__name__}")
        if "io-ce" in self.gatings and not self.ce_sizes:
            raise ValueError("the gating io-ce needs ce_sizes")
        for tc in (self.train, self.ce_train):
            if not isinstance(tc, TrainConfig):
                raise TypeError(f"train and ce_train must be TrainConfigs, got {tc!r}")

    def members(self, gating: str = "io") -> list[tuple[int, int]]:
        """(seed, n) of every member of one gating: sizes outer, seeds inner."""
        sizes = self.ce_sizes if gating == "io-ce" else self.sizes
        return [(seed, n) for n in sizes for seed in self.seeds]

    def largest(self, gating: str = "io") -> list[int]:
        """Member indices of every seed of one gating at its largest size."""
        members = self.members(gating)
        top = max(n for _, n in members)
        return [e for e, (_, n) in enumerate(members) if n == top]

    def student(self, gating: str, seed: int, n: int) -> GatedRNN:
        t, side = self.task, gating == "side"
        init = "io" if gating == "io-ce" else gating  # the ablation starts where "io" starts
        seed = derive_seed(seed, f"student-{init}")
        return GatedRNN(
            t.d, n, 0 if side else n, t.d_out, side=side, seed=seed, lam_range=self.lam_range
        )

    def evaluation_batch(self) -> RecallBatch:
        """The held-out sequences every member is scored on."""
        g = torch.Generator().manual_seed(derive_seed(0, "eval"))
        return self.task.sample_batch(self.eval_batch, g)

    def networks(self, tensors: dict, gating: str) -> list[GatedRNN]:
        """The trained members of one gating, float64, each at its own size."""
        t = tensors[gating]
        return unstack_students(t["params"], t["sizes"].tolist())

    def jobs(self, device: str = "cpu") -> list[Job]:
        """One job per gating."""
        return [
            Job(key=f"gating-{g}", label=f"gating {g}: {len(self.members(g))} members", part=g)
            for g in self.gatings
        ]

    def train_job(self, job: Job, *, checkpoint: Path | None = None, progress: bool = True):
        """Train the members of one gating ("io-ce": ``ce_train``, cross-entropy) and score them
        on ``evaluation_batch``; its tensors as ``assemble`` keeps them."""
        gating = str(job.part)
        members = self.members(gating)
        tc = replace(self.ce_train, loss="cross_entropy") if gating == "io-ce" else self.train
        res = train_by_size(
            [self.task] * len(members),
            [self.student(gating, seed, n) for seed, n in members],
            tc,
            data_seeds=[derive_seed(seed, "data") for seed, _ in members],
            checkpoint=checkpoint,
            progress=progress,
            desc=f"{self.name} ({gating})",
            groups=[range(len(members))] if gating == "io-ce" else None,
        )
        m = 0 if gating == "side" else 1
        out = {
            "params": {k: v.detach().to(torch.float64) for k, v in res.params.items()},
            "sizes": torch.tensor([[n, m * n] for _, n in members]),
            "seeds": torch.tensor([seed for seed, _ in members]),
            "loss_steps": res.loss_steps,
            "losses": res.losses.to(torch.float64),
            "train_wall_time_s": torch.tensor(res.wall_time, dtype=torch.float64),
        }
        batch = self.evaluation_batch()
        loss, acc = [], []
        with torch.no_grad():
            for rnn in self.networks({gating: out}, gating):
                y_hat = gated_rnn_forward(batch.x, rnn.params())
                if gating == "io-ce":
                    loss.append(float(F.cross_entropy(y_hat[:, -1], batch.answer)))
                else:
                    loss.append(float(query_mse(y_hat, batch.y, self.task.loss_scale)))
                acc.append(float((y_hat[:, -1].argmax(dim=1) == batch.answer).double().mean()))
        out["eval_loss"] = torch.tensor(loss, dtype=torch.float64)
        out["eval_accuracy"] = torch.tensor(acc, dtype=torch.float64)
        return out

    def assemble(self, jobs: list[Job], outputs: list[dict]):
        """``tensors[gating]``: ``params`` (E, ...) float64, zero-padded (``stack_students``);
        ``sizes`` (E, 2) each member's (n, m); ``seeds`` (E,); ``loss_steps`` (K,), ``losses``
        (K, E); ``eval_loss`` (E,) (MSE; cross-entropy for "io-ce"), ``eval_accuracy`` (E,)."""
        tensors = {str(job.part): out for job, out in zip(jobs, outputs, strict=True)}
        metrics = {
            f"{g}_{k}": tensors[g][f"eval_{k}"].tolist()
            for g in self.gatings
            for k in ("loss", "accuracy")
        }
        metrics["train_wall_time_s"] = sum(
            float(tensors[g]["train_wall_time_s"]) for g in self.gatings
        )
        return tensors, metrics


#: the quick profile's sizes n (= m): from below the squared-difference solution's 4 + 1 to
#: twice the naive attention construction's 16 key-value neurons
QUICK_SIZES = (4, 6, 8, 12, 16, 32)
#: the paper profile's sizes: the same range, finer, and 64
SIZES = (2, 4, 6, 8, 10, 12, 16, 24, 32, 64)
#: the quick profile's budget and its weight decay: lr x wd x steps = 10
QUICK_STEPS = 10_000
QUICK_WEIGHT_DECAY = 10 / (1e-2 * QUICK_STEPS)
#: the quick profile's steps of the cross-entropy ablation (its loss is ~1e-3 after 2,000)
QUICK_CE_STEPS = 4_000


def associative_recall_config(profile: str, **overrides) -> RecallConfig:
    """The App. D.3 config of a profile (N_k = N_v = 4); ``overrides`` replace top-level fields.

    paper   sizes SIZES, 5 seeds, 100,000 steps of batch 64, lr 1e-3, weight decay 0.1
    quick   sizes QUICK_SIZES, 3 seeds, QUICK_STEPS steps of batch 128, lr 1e-2
    smoke   sizes (4, 8), 2 seeds, 30 steps: only proves the code path
    Both have lr x weight decay x steps = 10. "io-ce": sizes up to 32 (quick: 6 and 32,
    QUICK_CE_STEPS steps), the profile's optimiser.
    """
    check_profile(profile)
    if profile == "smoke":
        tc = TrainConfig(steps=30, lr=1e-2, log_every=10, chunk_steps=10)
        config = RecallConfig(
            sizes=(4, 8), seeds=(0, 1), eval_batch=512, train=tc, ce_sizes=(4,), ce_train=tc
        )
    elif profile == "quick":
        tc = TrainConfig(
            steps=QUICK_STEPS,
            batch_size=128,
            lr=1e-2,
            weight_decay=QUICK_WEIGHT_DECAY,
            warmup_steps=200,
            log_every=50,
            checkpoint_every=1000,
        )
        ce = replace(tc, steps=QUICK_CE_STEPS, checkpoint_every=0)
        config = RecallConfig(
            sizes=QUICK_SIZES, seeds=(0, 1, 2), train=tc, ce_sizes=(6, 32), ce_train=ce
        )
    else:
        tc = TrainConfig(
            steps=100_000,
            lr=1e-3,
            weight_decay=0.1,
            warmup_steps=1000,
            log_every=500,
            checkpoint_every=10_000,
        )
        config = RecallConfig(
            sizes=SIZES,
            seeds=(0, 1, 2, 3, 4),
            eval_batch=16_384,
            train=tc,
            ce_sizes=tuple(n for n in SIZES if n <= 32),
            ce_train=replace(tc, checkpoint_every=0),
        )
    return replace(config, **overrides)


#: ours: lr x weight decay x steps = 1e-3 x 0.3 x 100,000 = 30, three times the paper profile's 10
PRUNE_WEIGHT_DECAY = 0.3


def prune_budget_config(profile: str) -> RecallConfig:
    """Side gating alone at n = 64 with a decay budget that prunes (ours, beyond the paper; why:
    book/associative_recall.md): the paper profile with weight decay PRUNE_WEIGHT_DECAY (budget 30),
    fixed before its run. quick: the same; smoke: n = 8, 2 seeds, 30 steps."""
    check_profile(profile)
    if profile == "smoke":
        smoke = associative_recall_config("smoke")
        return replace(smoke, name="associative-recall-prune", gatings=("side",), sizes=(8,))
    base = associative_recall_config("paper")
    return replace(
        base,
        name="associative-recall-prune",
        gatings=("side",),
        sizes=(64,),
        train=replace(base.train, weight_decay=PRUNE_WEIGHT_DECAY),
    )
