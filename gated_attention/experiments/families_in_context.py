"""Does each family learn in-context regression? The setup check of Fig. 4B (Sec. 5.3), ours.

Every family at one parameter count on the budget where the Sec. 5.2 gated RNN reaches one
optimal GD step (``in_context_regression.QUICK_TRAIN``), at its best rate of a small grid on a
held-out seed; both stages are ``architectures.ArchitectureConfig`` runs, so only the budget and
the rate choice differ from Fig. 4B's. Why: book/other_rnns_in_context.md.

Glossary (code name -> meaning -> shape):
    target       the parameter count every family is matched at (the largest quick target)
    lr_grid      the rates tried per family                                      (R,)
    seeds        the scored seeds                                                (E,)
    sweep_*      the rate search: groups (family, target, lr) in ``sweep().groups()`` order
    eval_loss    (F, E) in-distribution held-out query loss of each family and seed
    ood_loss     (F, E) the same with the W variance doubled (the OOD set of Fig. 4B)
    train_curves (F, K, E) mean training loss over each of K windows of ``train.log_every`` steps
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..engine import TrainConfig
from .architectures import FIG4_FAMILIES, LR_GRID, LRU_FAMILIES, ArchitectureConfig, best_lrs
from .in_context_regression import QUICK_TRAIN
from .profiles import check_profile
from .protocol import Experiment, Job

#: the gated RNN's in-context budget (Sec. 5.2 chapter, quick profile); the rate is per family
SETUP_TRAIN = dataclasses.replace(QUICK_TRAIN, checkpoint_every=0)
#: the one parameter count of the check: the largest target of the quick Fig. 4B run
SETUP_TARGET = 4000
#: the rates tried: LR_GRID without its top rate 1e-1 (three rates keep the search at about 20
#: minutes of one CPU core; a family whose best rate is 3e-2 is flagged as at the grid's edge)
SETUP_LR_GRID = tuple(r for r in LR_GRID if r < 0.05)


@dataclass(frozen=True)
class SetupCheckConfig(Experiment):
    """Every family at ``target`` parameters on ``train``'s budget, for ``experiments.run``: a
    rate search on ``lr_seed``, then ``seeds`` at each family's best rate (``train.lr`` unused).

    Ours: the budget (the gated RNN's, not Fig. 4B's), the grid, the search seed, ``eval_batch``.
    """

    name: str = "fig4b-setup"
    families: tuple[str, ...] = FIG4_FAMILIES
    target: int = SETUP_TARGET
    seeds: tuple[int, ...] = (0, 1)
    lr_seed: int = 100
    lr_grid: tuple[float, ...] = SETUP_LR_GRID
    init_scales: tuple[tuple[str, float], ...] = ()
    eval_batch: int = 20_000
    train: TrainConfig = field(default_factory=lambda: SETUP_TRAIN)

    def __post_init__(self) -> None:
        if not self.seeds:
            raise ValueError("seeds must name at least one scored seed")
        if self.lr_seed in self.seeds:
            raise ValueError(
                f"lr_seed {self.lr_seed} is also a scored seed: the rate must be chosen on a "
                "held-out seed"
            )
        if not isinstance(self.target, int) or self.target < 1:
            raise ValueError(f"target must be a positive parameter count, got {self.target!r}")
        if not self.lr_grid or not all(math.isfinite(r) and r > 0 for r in self.lr_grid):
            raise ValueError(f"lr_grid must hold positive rates, got {self.lr_grid!r}")
        if not isinstance(self.train, TrainConfig):
            raise TypeError(f"train must be a TrainConfig, got {type(self.train).__name__}")
        self.sweep()  # an unknown family is an error that lists the known ones

    def sweep(self) -> ArchitectureConfig:
        """The rate search: every family at every rate of ``lr_grid``, on ``lr_seed`` only."""
        return self._run(f"{self.name}-lr", seeds=(self.lr_seed,), lr_grid=self.lr_grid)

    def main(self, lrs: tuple[tuple[str, float], ...]) -> ArchitectureConfig:
        """The scored run: every family at its rate ``lrs`` ((family, lr), ...), on ``seeds``."""
        return self._run(self.name, seeds=self.seeds, lrs=lrs)

    def _run(self, name: str, **fields) -> ArchitectureConfig:
        return ArchitectureConfig(
            name=name,
            task="regression",
            families=self.families,
            targets=(self.target,),
            init_scales=self.init_scales,
            eval_batch=self.eval_batch,
            train=self.train,
            **fields,
        )

    def jobs(self, device: str = "cpu") -> list[Job]:
        """One job per family: its rate search, then its scored run at the best rate."""
        return [
            Job(key=f"family-{f}", label=f"{f}: {len(self.lr_grid)} rates, then the seeds", part=f)
            for f in self.families
        ]

    def train_job(self, job: Job, *, checkpoint: Path | None = None, progress: bool = True):
        """The search rows of one family (networks dropped), its rate and its scored row."""
        fam, sweep = str(job.part), self.sweep()
        ks = [k for k, (f, _, _) in enumerate(sweep.groups()) if f == fam]
        searched = []
        for k in ks:  # each search group keeps its index in the whole search (its init seed)
            ck = None if checkpoint is None else checkpoint.with_suffix(f".lr{k}.pt")
            row = sweep.train_group(k, checkpoint=ck, progress=progress)
            row.pop("params")  # the search's networks are not kept
            searched.append(row)
            if ck is not None:
                ck.unlink(missing_ok=True)
        scales = tuple((f, x) for f, x in sweep.init_scales if f == fam)
        one = dataclasses.replace(sweep, families=(fam,), init_scales=scales)
        rows = one.stack_rows(searched, one.groups())
        ((_, lr),) = best_lrs(one, rows)
        row = self.main(((fam, lr),)).train_group(
            self.families.index(fam), checkpoint=checkpoint, progress=progress
        )
        return {"searched": searched, "lr": lr, "row": row}

    def assemble(self, jobs: list[Job], outputs: list[dict]):
        """The scored run's tensors (``ArchitectureConfig.stack_rows``) and the search's as
        ``sweep_eval_loss``, ``sweep_ood_loss``, ``sweep_final_train_loss`` (F R, 1),
        ``sweep_lrs``, ``sweep_step_time`` (F R,)."""
        by_family = {str(job.part): out for job, out in zip(jobs, outputs, strict=True)}
        lrs = tuple((f, float(by_family[f]["lr"])) for f in self.families)
        main, sweep = self.main(lrs), self.sweep()
        rows = [by_family[f]["row"] for f in self.families]
        tensors = main.stack_rows(rows, main.groups())
        searched = sweep.stack_rows(
            [r for f in self.families for r in by_family[f]["searched"]], sweep.groups()
        )
        for key in ("eval_loss", "ood_loss", "lrs", "final_train_loss", "step_time"):
            tensors[f"sweep_{key}"] = searched[key]
        metrics = {
            "train_wall_time_s": sum(float(r["wall_time"]) for r in rows),
            "groups": [list(g) for g in main.groups()],
            "lrs": [list(r) for r in lrs],
        }
        return tensors, metrics


def setup_check_config(profile: str) -> SetupCheckConfig:
    """The setup check of a profile.

    quick   every family at 4,000 parameters, 2 scored seeds and 1 held-out seed, the grid
            SETUP_LR_GRID (3e-3, 1e-2, 3e-2), 5,000 steps of batch 128 with 200 warm-up steps
            (a recorded run, ``fig4b-setup-quick``).
    paper   the same (the check is ours, and this is the budget it is about)
    smoke   300 parameters, 2 seeds, 2 rates, 4 steps: only proves the code path
    """
    check_profile(profile)
    if profile == "smoke":
        tc = TrainConfig(steps=4, batch_size=16, warmup_steps=1, log_every=2, chunk_steps=2)
        return SetupCheckConfig(target=300, lr_grid=(1e-2, 3e-2), eval_batch=64, train=tc)
    return SetupCheckConfig()


def setup_check_lru_init_config(profile: str) -> SetupCheckConfig:
    """The check of the LRU families only, their nn.Linear-drawn matrices times sqrt 3 at init
    (variance 1 / fan_in): the change the pilots (``setup_pilots``) find the largest; otherwise
    ``setup_check_config(profile)`` (quick: a recorded run, ``fig4b-setup-lru-init-quick``)."""
    scales = tuple((f, math.sqrt(3.0)) for f in LRU_FAMILIES)
    base = setup_check_config(profile)
    return dataclasses.replace(
        base, name=f"{base.name}-lru-init", families=LRU_FAMILIES, init_scales=scales
    )
