"""What a training run is told: the optimiser and engine settings (``TrainConfig``), what it
returns (``TrainResult``) and the learning-rate schedule (Sec. 4.1: AdamW, cosine annealing)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

#: the engine's modes (``TrainConfig.mode``; ``loop``'s docstring)
MODES = ("fast", "compiled", "reference")

#: the optimisers (``TrainConfig.optimiser``; ``loop.optimiser``): AdamW is the paper's
OPTIMISERS = ("adamw", "adam_l2", "sgd_l2")

#: the learning-rate schedules (``TrainConfig.schedule``)
SCHEDULES = ("cosine", "constant")

#: the training losses (``TrainConfig.loss``): the task's masked MSE, or ``losses.cross_entropy``
LOSSES = ("mse", "cross_entropy")

DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class TrainConfig:
    """Optimiser and engine settings (the paper gives AdamW, cosine annealing, batch 64, 1M steps).

    Defaults are our choices where the paper is silent: lr 1e-3 annealed to eta_min 1e-6, weight
    decay 1e-4 (on all parameters but nu), Adam's betas and eps, no warm-up, no gradient
    clipping (it would couple ensemble members); each experiment's: ``experiments.presets``.
    ``lam_max`` (ours, beyond the paper) caps lam = exp(-exp(nu)): ``train`` projects nu onto
    nu >= log(-log lam_max) at the start and after every step (1.0: no cap).
    """

    steps: int
    batch_size: int = 64
    lr: float = 1e-3
    eta_min: float = 1e-6
    weight_decay: float = 1e-4
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    warmup_steps: int = 0
    log_every: int = 100
    chunk_steps: int = 50
    checkpoint_every: int = 0  # 0: never; else a multiple of chunk_steps
    mode: str = "fast"
    dtype: str = "float32"
    lam_max: float = 1.0
    loss: str = "mse"
    optimiser: str = "adamw"
    schedule: str = "cosine"

    def __post_init__(self) -> None:
        for name, allowed in (
            ("loss", LOSSES),
            ("optimiser", OPTIMISERS),
            ("schedule", SCHEDULES),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"unknown TrainConfig.{name} {getattr(self, name)!r}; expected one of "
                    f"{', '.join(allowed)}"
                )
        for name in ("steps", "batch_size", "log_every", "chunk_steps"):
            val = getattr(self, name)
            if not isinstance(val, int) or val < 1:
                raise ValueError(f"TrainConfig.{name} must be a positive integer, got {val!r}")
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; expected one of {', '.join(MODES)}")
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; expected one of {', '.join(DTYPES)}")
        if self.checkpoint_every < 0 or self.checkpoint_every % self.chunk_steps:
            raise ValueError(
                f"checkpoint_every ({self.checkpoint_every}) must be 0 or a multiple of "
                f"chunk_steps ({self.chunk_steps}): checkpoints fall between data chunks"
            )
        lam_max = self.lam_max
        if isinstance(lam_max, bool) or not isinstance(lam_max, int | float):
            raise ValueError(f"TrainConfig.lam_max must be a number in (0, 1], got {lam_max!r}")
        if not 0.0 < lam_max <= 1.0:  # also false for NaN
            raise ValueError(
                f"TrainConfig.lam_max must lie in (0, 1] (the cap on lam; 1.0: no cap), "
                f"got {lam_max!r}"
            )
        if isinstance(self.warmup_steps, bool) or not isinstance(self.warmup_steps, int):
            raise ValueError(
                f"TrainConfig.warmup_steps must be an integer >= 0, got {self.warmup_steps!r}"
            )
        if not 0 <= self.warmup_steps < self.steps:
            raise ValueError(f"warmup_steps must lie in [0, steps), got {self.warmup_steps}")
        self._check_optimiser_numbers()

    def _check_optimiser_numbers(self) -> None:
        """lr, weight_decay, eta_min >= 0, eps > 0 (finite), betas two numbers in [0, 1)."""

        def number(name: str, val: object) -> float:
            if isinstance(val, bool) or not isinstance(val, int | float) or not math.isfinite(val):
                raise ValueError(f"TrainConfig.{name} must be a finite number, got {val!r}")
            return float(val)

        for name in ("lr", "weight_decay", "eta_min"):  # lr 0: a control run that changes nothing
            if not number(name, getattr(self, name)) >= 0:
                raise ValueError(f"TrainConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        if not number("eps", self.eps) > 0:
            raise ValueError(f"TrainConfig.eps must be > 0, got {self.eps!r}")
        betas = self.betas
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise ValueError(f"TrainConfig.betas must be two numbers in [0, 1), got {betas!r}")
        for i, b in enumerate(betas):
            if not 0 <= number(f"betas[{i}]", b) < 1:
                raise ValueError(f"TrainConfig.betas[{i}] must lie in [0, 1), got {b!r}")

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def nu_min(self) -> float | None:
        """The smallest nu the cap allows, log(-log lam_max); None without a cap."""
        return None if self.lam_max >= 1.0 else math.log(-math.log(self.lam_max))


@dataclass
class TrainResult:
    """What ``train`` returns. E = number of ensemble members, K = number of logged windows.

    params       final parameters, dict of (E, ...) float tensors (masked entries are zero)
    loss_steps   (K,) step count at the end of each logged window
    losses       (K, E) mean training loss of each member over each window
    final_loss   (E,) mean training loss over the last window
    wall_time    seconds spent in this call (a resumed run counts only its own part)
    """

    params: dict[str, torch.Tensor]
    loss_steps: torch.Tensor
    losses: torch.Tensor
    wall_time: float
    resumed_from: int = 0

    @property
    def final_loss(self) -> torch.Tensor:
        return self.losses[-1]


def cosine_lr(step: int, config: TrainConfig) -> float:
    """The learning rate at ``step``: linear warm-up, then cosine from lr to eta_min; or lr."""
    c = config
    if c.schedule == "constant":
        return c.lr
    if step < c.warmup_steps:
        return c.lr * (step + 1) / c.warmup_steps
    progress = (step - c.warmup_steps) / max(1, c.steps - c.warmup_steps)
    return c.eta_min + 0.5 * (c.lr - c.eta_min) * (1.0 + math.cos(math.pi * min(1.0, progress)))
