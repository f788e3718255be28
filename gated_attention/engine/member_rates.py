"""Each member of an ensemble at its own learning rate (``train(..., member_lrs=...)``): a rate
search as one ensemble instead of one run per rate.

The optimiser steps every member at the run's rate lr(s), then w_e <- w_e + r_e(s) (w_e' - w_e),
one ``lerp_`` a weight, with r_e(s) = lr_e(s) / lr(s), lr_e(s) the member's own run's rate
(``cosine_lr`` with lr = lr_e). In exact arithmetic this is the member's own update for every
optimiser of ``TrainConfig`` (each moves a weight by lr times a term, and keeps a state, that do
not depend on lr); in floating point it differs by rounding (``tests/test_member_rates.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from .config import TrainConfig, cosine_lr


def check_member_lrs(member_lrs: Sequence[float] | None, E: int, config: TrainConfig) -> None:
    """A ValueError unless ``member_lrs`` is None or E positive finite rates, for a run whose
    own rate is positive."""
    if member_lrs is None:
        return
    rates = list(member_lrs)
    if len(rates) != E:
        raise ValueError(f"{len(rates)} member_lrs for an ensemble of {E}")
    if not all(isinstance(r, (int, float)) and r > 0 and r < float("inf") for r in rates):
        raise ValueError(f"member_lrs must be positive finite numbers, got {rates}")
    if not config.lr > 0:
        raise ValueError(f"member_lrs scale the run's rate, which must be positive: {config.lr}")


class MemberRates:
    """Scales each member's move after every ``opt.step`` (module docstring), through the
    optimiser's step hooks; a step that updates without ``opt.step`` (``steps.CompiledStep``)
    finds it as ``opt.member_rates`` and calls ``before_step`` and ``after_step`` around it."""

    def __init__(self, opt, sched, config: TrainConfig, member_lrs: Sequence[float]):
        self.opt, self.sched = opt, sched
        self.configs = [dataclasses.replace(config, lr=float(r)) for r in member_lrs]
        self.params = [p for g in opt.param_groups for p in g["params"]]
        self.before: list[torch.Tensor] | None = None
        opt.register_step_pre_hook(lambda *_: self.before_step())
        opt.register_step_post_hook(lambda *_: self.after_step())
        opt.member_rates = self

    def rates(self) -> torch.Tensor:
        """(E,) float64: r_e at the step being made."""
        s, lr = self.sched.last_epoch, self.opt.param_groups[0]["lr"]
        return torch.tensor([cosine_lr(s, c) / lr for c in self.configs], dtype=torch.float64)

    @torch.no_grad()
    def before_step(self) -> None:
        """Remember the weights before the step."""
        now = [p.detach() for p in self.params]
        if self.before is None:
            self.before = [p.clone() for p in now]
        else:
            torch._foreach_copy_(self.before, now)

    @torch.no_grad()
    def after_step(self) -> None:
        """Each member's move since ``before_step`` scaled by its r_e: w' + (1 - r_e)(w - w')."""
        keep = 1.0 - self.rates()
        on: dict[tuple, torch.Tensor] = {}
        for p, b in zip(self.params, self.before, strict=True):
            key = (p.dtype, p.device)
            if key not in on:
                on[key] = keep.to(dtype=p.dtype, device=p.device)
            p.lerp_(b, on[key].view(-1, *([1] * (p.dim() - 1))))
