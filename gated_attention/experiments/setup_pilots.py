"""Why a family does not learn in-context regression: short-budget pilots of the Fig. 4B setup
check (``families_in_context``), ours (book/other_rnns_in_context.md). One family, one held-out
seed, a short budget, and one change at a time to how the family is drawn or trained:

    init_scale       every matrix drawn by nn.Linear's rule (LRU families) times this: sqrt 3
                     gives them variance 1 / fan_in instead of 1 / (3 fan_in)
    skip_scale       the LRU's elementwise skip Dskip (N(0, 1) at init) times this
    readout_scale    the readout times this (the gated RNN's D, every other family's W_out)
    prenorm          LRU families: u normalised over its H coordinates before each block and
                     before the readout (``models.lru_pilots.forward_prenorm``)

Glossary (code name -> meaning -> shape):
    eval_loss     (1,) in-distribution held-out query loss (``eval_batch`` sequences)
    train_curve   (K,) mean training loss of each of K windows of ``train.log_every`` steps
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import torch

from ..engine import TrainConfig, train
from ..models import lru_pilots
from ..models.family_registry import family, width_for
from ..tasks.protocol import masked_mse
from ..tasks.regression import InContextRegression
from .architectures import LRU_FAMILIES
from .families_in_context import SETUP_TARGET, SETUP_TRAIN
from .profiles import check_profile, derive_seed, held_out_batch
from .protocol import Experiment, Job

#: the pilots' budget: a fifth of the check's steps, its batch, warm-up and schedule
PILOT_TRAIN = TrainConfig(
    steps=1000, batch_size=128, lr=1e-2, warmup_steps=200, log_every=200, chunk_steps=50
)


@dataclass(frozen=True)
class PilotConfig(Experiment):
    """One family with one change (see the module docstring), for ``experiments.run``."""

    name: str = "fig4b-setup-pilot"
    family: str = "lru"
    target: int = SETUP_TARGET
    seed: int = 100
    init_scale: float = 1.0
    skip_scale: float = 1.0
    readout_scale: float = 1.0
    prenorm: bool = False
    eval_batch: int = 8192
    train: TrainConfig = field(default_factory=lambda: PILOT_TRAIN)

    def __post_init__(self) -> None:
        family(self.family)  # an unknown family is an error that lists the known ones
        for name in ("init_scale", "skip_scale", "readout_scale"):
            val = getattr(self, name)
            if not (math.isfinite(val) and val > 0) and not (name == "skip_scale" and val == 0):
                raise ValueError(f"{name} must be a finite scale > 0, got {val!r}")
        lru_only = self.init_scale != 1.0 or self.skip_scale != 1.0 or self.prenorm
        if lru_only and self.family not in LRU_FAMILIES:
            raise ValueError(
                f"init_scale, skip_scale and prenorm apply to the LRU families "
                f"({', '.join(LRU_FAMILIES)}), not to {self.family!r}"
            )

    @property
    def change(self) -> str:
        """The change from the family as the check draws and trains it, in words."""
        parts = [f"lr {self.train.lr:g}", f"warm-up {self.train.warmup_steps}"]
        for name, default in (("init_scale", 1.0), ("skip_scale", 1.0), ("readout_scale", 1.0)):
            if getattr(self, name) != default:
                parts.append(f"{name} {getattr(self, name):.3g}")
        return ", ".join(parts + (["prenorm"] if self.prenorm else []))

    def params(self) -> dict[str, torch.Tensor]:
        """The initial parameters, (1, ...) float64, with the scales applied."""
        task = InContextRegression()
        fam = family(self.family)
        width = width_for(fam, task.d, task.d_out, self.target)
        g = torch.Generator().manual_seed(derive_seed(self.seed, f"init/{self.family}"))
        P = fam.init(task.d, task.d_out, width, 1, g, torch.float64)
        readout = "D" if self.family in ("gated", "dense") else "W_out"
        readout = readout if readout in P else "W_o"  # LSTM, GRU
        if self.family in LRU_FAMILIES:
            P = lru_pilots.scale_linear(P, self.init_scale) if self.init_scale != 1.0 else P
            P = {k: v * self.skip_scale if k.endswith("_D") else v for k, v in P.items()}
        P[readout] = P[readout] * self.readout_scale
        return P

    def forward(self):
        """The family's forward, or the normalised LRU forward (``prenorm``)."""
        return lru_pilots.forward_prenorm if self.prenorm else family(self.family).forward

    def jobs(self, device: str = "cpu") -> list[Job]:
        return [Job(key="pilot", label=f"{self.family}: {self.change}")]

    def assemble(self, jobs: list[Job], outputs: list[dict]):
        (out,) = outputs
        tensors = {k: out[k] for k in ("eval_loss", "train_curve")}
        return tensors, {"train_wall_time_s": float(out["train_wall_time_s"])}

    def train_job(self, job: Job, *, checkpoint=None, progress: bool = True):
        """Train the one member; evaluate it on held-out sequences."""
        task = InContextRegression()
        fused = self.family == "gated"  # the diagonal gated RNN trains on its fused path
        res = train(
            [task],
            self.params(),
            self.train,
            data_seeds=[derive_seed(self.seed, "data")],
            no_decay=family(self.family).no_decay,
            forward=None if fused else self.forward(),
            checkpoint=checkpoint,
            progress=progress,
            desc=f"{self.name} {self.family}",
        )
        p = {k: v.to(torch.float64) for k, v in res.params.items()}
        x, y = held_out_batch([task], [self.seed], self.eval_batch)
        with torch.no_grad():
            y_hat = self.forward()(x, p)
        loss = masked_mse(y_hat, y, task.loss_mask, task.loss_scale)  # (1,)
        curve = res.losses[:, 0].to(torch.float64)
        return {"eval_loss": loss, "train_curve": curve, "train_wall_time_s": res.wall_time}


def pilot_configs(profile: str) -> list[PilotConfig]:
    """The pilots the chapter shows, in its order: the gated RNN as drawn and with the Sec. 5.2
    readout scale (also on the check's full budget, ``SETUP_TRAIN``); the LRU as drawn, one change
    at a time, two together; on the full budget, the LRU at a lower rate and two initial scales.

    quick, paper   PILOT_TRAIN (a fifth of the check's steps); on the full budget, 5,000 steps
    smoke          4 steps (on the full budget: 6): only proves the code path
    """
    check_profile(profile)
    base, full = PilotConfig(), dataclasses.replace(SETUP_TRAIN, lr=PILOT_TRAIN.lr)
    if profile == "smoke":
        tc = TrainConfig(steps=4, batch_size=16, lr=1e-2, warmup_steps=1, log_every=2)
        base = dataclasses.replace(base, train=tc, eval_batch=64)
        full = dataclasses.replace(tc, steps=6)
    tc, r3 = base.train, math.sqrt(3.0)
    return [
        dataclasses.replace(base, family="gated"),
        dataclasses.replace(base, family="gated", readout_scale=0.1),
        dataclasses.replace(base, family="gated", readout_scale=0.1, train=full),
        base,
        dataclasses.replace(base, train=dataclasses.replace(tc, lr=3e-3)),
        dataclasses.replace(base, train=dataclasses.replace(tc, lr=3e-2)),
        dataclasses.replace(base, train=dataclasses.replace(tc, warmup_steps=0)),
        dataclasses.replace(base, init_scale=r3),
        dataclasses.replace(base, skip_scale=0.3),
        dataclasses.replace(base, prenorm=True),
        dataclasses.replace(base, init_scale=r3, prenorm=True),
        dataclasses.replace(base, train=dataclasses.replace(full, lr=1e-3)),
        dataclasses.replace(base, init_scale=r3, train=full),
        dataclasses.replace(base, init_scale=3.0, train=full),
    ]


@dataclass(frozen=True)
class PilotSetConfig(Experiment):
    """Several pilots as one experiment (one job each), so that Table 3 records as one run:
    tensors ``{"0": pilot 0's tensors, "1": ...}``."""

    name: str = "fig4b-setup-pilots"
    pilots: tuple[PilotConfig, ...] = ()

    def __post_init__(self) -> None:
        if not self.pilots or not all(isinstance(p, PilotConfig) for p in self.pilots):
            raise ValueError("pilots must be a non-empty tuple of PilotConfig")

    def jobs(self, device: str = "cpu") -> list[Job]:
        return [
            Job(key=f"pilot-{i}", label=f"{p.family}: {p.change}", part=i)
            for i, p in enumerate(self.pilots)
        ]

    def train_job(self, job: Job, *, checkpoint=None, progress: bool = True):
        return self.pilots[int(job.part)].train_job(job, checkpoint=checkpoint, progress=progress)

    def assemble(self, jobs: list[Job], outputs: list[dict]):
        """Each pilot's tensors under its index; metrics: their wall times."""
        parts = [p.assemble([j], [o]) for p, j, o in zip(self.pilots, jobs, outputs, strict=True)]
        tensors = {str(i): t for i, (t, _) in enumerate(parts)}
        return tensors, {"train_wall_time_s": [m["train_wall_time_s"] for _, m in parts]}

    def pairs(self, tensors: dict) -> list[tuple[PilotConfig, dict]]:
        """(pilot, its tensors) of an entry's ``tensors``, in order: what Table 3 reads."""
        return [(p, tensors[str(i)]) for i, p in enumerate(self.pilots)]


def pilot_set_config(profile: str) -> PilotSetConfig:
    """``pilot_configs(profile)`` as one experiment (recorded: ``fig4b-setup-pilots-quick``)."""
    return PilotSetConfig(pilots=tuple(pilot_configs(profile)))
