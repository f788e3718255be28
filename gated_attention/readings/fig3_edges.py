"""Fig. 3A-C read one way: the loss edge of every sweep (``Sweep``: sizes, excess losses over
seeds, budget, setting) at the levels of ``analysis.loss_edge``, with its interval over seeds
and whether its students were still learning."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .. import experiments
from ..analysis.loss_edge import (
    CENTRAL_LEVEL,
    Edge,
    edge_interval,
    edges,
    median_excess,
    still_learning,
)
from ..experiments.robustness import FINE, VARIANTS
from ..tasks import regression
from .sweep_losses import normalised_losses

#: the construction's neuron count per panel (App. A.3, A.4; the previous chapter for C)
CONSTRUCTION = {"A": 14, "B": 42, "C": 12}
#: the recorded runs' name prefix per panel
PREFIX = {"A": "how-many-neurons-A-", "B": "how-many-neurons-B-", "C": "in-context-regression-"}
#: the keys of ``largest`` in the order of the finding's table
SETTINGS = ("A", "A-wd", "A-lr", "A-lr-wd", "A-teacher", "B", "C")


@dataclasses.dataclass(frozen=True)
class Sweep:
    """One finished sweep: ``excess`` (S, R) at ``sizes`` (S,); ``T`` None: the task's own length;
    ``still`` (S,): seeds of each size still learning at the end (None: not known)."""

    panel: str  # "A", "B" or "C"
    sizes: np.ndarray
    excess: np.ndarray
    steps: int
    T: int | None
    run: str = ""  # the recorded run's name (several: joined by " + "), or "" for this build's
    still: np.ndarray | None = None
    setting: str = ""  # the settings of ours it was trained with, in words (``_setting``)

    @property
    def construction(self) -> int:
        return CONSTRUCTION[self.panel]

    @property
    def claim(self) -> str:
        """The claim of its panel in paper_values.json: "fig3a", "fig3b" or "fig3c"."""
        return f"fig3{self.panel.lower()}"

    @property
    def seeds(self) -> int:
        return self.excess.shape[1]

    @property
    def spent(self) -> int:
        """Steps x T: which of two sweeps of a panel had the larger budget."""
        return self.steps * (self.T or 1)

    def share(self, paper: dict) -> float:
        """Steps x T over the paper's (``paper``: the claim's {"steps", "T"})."""
        return self.steps * (self.T or paper["T"]) / (paper["steps"] * paper["T"])

    def edges(self) -> dict[float, Edge]:
        """n*_L at every level of ``analysis.LEVELS``."""
        return edges(self.sizes, self.excess, self.construction)

    def interval(self, level: float = CENTRAL_LEVEL) -> tuple[float | None, float | None]:
        """The 95% bootstrap interval over seeds of n*_L / the construction's count (None
        above: no edge among the sizes in more than 2.5% of the draws)."""
        lo, hi = edge_interval(self.sizes, self.excess, level)
        return tuple(None if v is None else v / self.construction for v in (lo, hi))


def _still(run: Any, sizes, members, excess, level: float, floor: float = 0.0):
    """(S,) seeds of each size still learning; None where the losses are logged too sparsely."""
    T = run.tensors
    if "loss_steps" not in T or "losses" not in T:
        return None
    steps, losses = T["loss_steps"].numpy(), T["losses"].numpy()
    try:
        flags = still_learning(steps, losses, excess, level, run.config.train.steps, floor=floor)
    except ValueError:
        return None
    return np.array([int(flags[members == n].sum()) for n in sizes])


def _num(x: float) -> str:
    """0.001 -> '1e-3' (a power of ten), 0.07 -> '0.07'."""
    e = np.log10(x)
    return f"1e{int(round(e))}" if x > 0 and abs(e - round(e)) < 1e-9 else f"{x:g}"


def _setting(config: Any) -> str:
    """'lr 1e-3, wd 0.07' (+ the teacher's scale if 1/d): the key chapters look a row up by."""
    words = f"lr {_num(config.train.lr)}, wd {_num(config.train.weight_decay)}"
    if getattr(config, "d", None) and getattr(config, "teacher_std", 0) is None:
        words += ", teacher variance 1/d"
    return words


def from_teacher(run: Any, name: str = "") -> Sweep:
    """Fig. 3A/B: a teacher-student size sweep's ``normalised_losses``."""
    c = run.config
    sizes, L = normalised_losses(c, run.tensors["eval_loss"])
    panel = {4: "A", 12: "B"}[c.d]
    members = np.repeat(sizes, L.shape[1])  # sizes outer, seeds inner
    still = _still(run, sizes, members, L.reshape(-1), CENTRAL_LEVEL)
    return Sweep(panel, sizes, L, c.train.steps, c.T, name, still, _setting(c))


def from_regression(run: Any, name: str = "") -> Sweep:
    """Fig. 3C: each network's paired gap to one optimal GD step over ``ZERO_LOSS - GD_MIN_LOSS``:
    the construction's (GD's) loss is 0, predicting 0 is 1."""
    T = run.tensors
    sizes = T["sizes"].numpy()
    sweep = np.array(sorted(set(sizes.tolist())))
    gap = T["eval_gap"].numpy() / (regression.ZERO_LOSS - regression.GD_MIN_LOSS)
    excess = np.stack([gap[sizes == n] for n in sweep])
    still = _still(run, sweep, sizes, gap, CENTRAL_LEVEL, floor=regression.GD_MIN_LOSS)
    c = run.config
    return Sweep("C", sweep, excess, c.train.steps, None, name, still, _setting(c))


def merge(coarse: Sweep, fine: Sweep) -> Sweep:
    """One sweep of ``coarse``'s sizes and ``fine``'s (the same panel, seeds, steps and T: the
    same teachers and data per seed); a size in both is read from ``coarse``."""
    setting = lambda s: (s.panel, s.seeds, s.steps, s.T, s.setting)  # noqa: E731
    if setting(coarse) != setting(fine):
        raise ValueError(f"cannot merge {coarse.run!r} and {fine.run!r}: not one setting's runs")
    extra = ~np.isin(fine.sizes, coarse.sizes)
    order = np.argsort(np.concatenate([coarse.sizes, fine.sizes[extra]]))
    stack = lambda a, b: np.concatenate([a, b[extra]])[order]  # noqa: E731
    unknown = coarse.still is None or fine.still is None
    return dataclasses.replace(
        coarse,
        sizes=stack(coarse.sizes, fine.sizes),
        excess=stack(coarse.excess, fine.excess),
        run=f"{coarse.run} + {fine.run}",
        still=None if unknown else stack(coarse.still, fine.still),
    )


def read(name: str) -> Sweep:
    """The recorded run ``name`` (of Fig. 3A, 3B or 3C) as a Sweep."""
    run = experiments.recorded(name)
    if name.startswith(PREFIX["C"]):
        return from_regression(run, name)
    return from_teacher(run, name)


def _key(name: str) -> str | None:
    """A recorded run's key in ``largest``: "A", "B", "C", "A-<variant>[-fine]", or None."""
    tail = name.removeprefix(f"{PREFIX['A']}cpu-")
    if tail != name and tail.removesuffix("-fine") in VARIANTS:
        return f"A-{tail}"
    return next((p for p, pre in PREFIX.items() if name.startswith(pre)), None)


def largest() -> dict[str, Sweep]:
    """The largest recorded sweep (steps x T) of each panel and each setting of Fig. 3A ("A-wd",
    ...), merged with its fine sweep where one is recorded."""
    out: dict[str, Sweep] = {}
    for name in experiments.recorded_names():
        key = _key(name)
        if key is None:
            continue
        s = read(name)
        if key not in out or s.spent > out[key].spent:
            out[key] = s
    for v in FINE:
        fine = out.pop(f"A-{v}-fine", None)
        if fine is not None and f"A-{v}" in out:
            out[f"A-{v}"] = merge(out[f"A-{v}"], fine)
    return out


@dataclasses.dataclass(frozen=True)
class SizeRow:
    """One size of a sweep: excess loss over seeds, seeds still learning (None: not known)."""

    n: int
    median: float
    min: float
    max: float
    still: int | None


def size_rows(s: Sweep) -> list[SizeRow]:
    """Per size of ``s``: the median excess loss over seeds (min .. max), seeds still learning."""
    med = median_excess(s.excess)
    still = s.still if s.still is not None else [None] * len(s.sizes)
    return [
        SizeRow(int(n), float(m), float(row.min()), float(row.max()), None if k is None else int(k))
        for n, m, row, k in zip(s.sizes, med, s.excess, still, strict=True)
    ]


@dataclasses.dataclass(frozen=True)
class LevelRow:
    """A sweep's edge at one level: n* (None: none among the sizes) and n*/count (NaN: none)."""

    level: float
    edge: int | None
    ratio: float
    central: bool


def level_rows(s: Sweep) -> list[LevelRow]:
    """n* at each level of ``analysis.LEVELS`` of ``s``, and n*/count."""
    return [LevelRow(L, e.estimate, e.ratio, L == CENTRAL_LEVEL) for L, e in s.edges().items()]
