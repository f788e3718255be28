"""Which architectures learn attention (Sec. 4.3, Fig. 4A, App. Fig. 6) and in context (Sec. 5.3,
Fig. 4B): every family of ``models.family_registry`` at matched parameter counts (the width
closest to the target, ``models.width_for``, as in App. Fig. 6). Each (family, target, lr) group's
seeds train as one ensemble, one job each (``groups_together``: one job per family).

Glossary (code name -> paper symbol -> section):
    task          "teacher": teacher-student at d = 6 (Fig. 4A); "regression": in-context
                  regression, scored in distribution and OOD (W variance doubled, Fig. 4B)
    targets       parameter counts the families are matched at                 App. Fig. 6
    lr_grid       a rate sweep, the same for every family; ``best_lrs`` picks each one's rate
    lrs           the rate of each family in a main run, ((family, lr), ...)
    init_scales   ((family, factor), ...): LRU families whose nn.Linear-drawn matrices are scaled
                  at init (``models.lru_pilots.scale_linear``); none in the runs of Fig. 4A/B
    eval_loss     (G, E) held-out loss; teacher: over the teacher's output power; regression:
                  the query loss (OOD in ``ood_loss``)
    train_curves  (G, K, E) mean training loss of each of K windows of ``train.log_every`` steps
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..engine import TrainConfig, train
from ..models.family_registry import family, width_for
from ..models.lru_pilots import scale_linear
from ..models.padding import pad_members, split_members
from ..models.shell import parameter_count
from ..tasks.protocol import masked_mse
from ..tasks.regression import InContextRegression
from ..tasks.teacher_student import TeacherStudentTask
from .profiles import check_profile, derive_seed, held_out_batch
from .protocol import Experiment, Job
from .teacher_identification import TEACHER_STD

#: the families of Fig. 4A/B, in the order the figures list them
FIG4_FAMILIES = ("gated", "dense", "lstm", "gru", "lru", "lru_inout", "lru_inout_mlp")
#: the LRU families (``init_scales`` may scale their linear maps)
LRU_FAMILIES = ("lru", "lru_inout", "lru_inout_mlp")


@dataclass(frozen=True)
class ArchitectureConfig(Experiment):
    """Families x parameter targets x seeds (x learning rates in a sweep), for ``experiments.run``.

    Ours (the paper does not give them): ``teacher_std``, each family's initialisation, the
    optimiser in ``train``, each family's rate (the same sweep for all).
    compile_cells    train with ``Family.compiled`` where a family has it (same map up to rounding)
    groups_together  each family's groups as one ensemble (``train_together``; same networks up
                     to rounding; one step's kernels for all: a GPU's step is launch-bound)
    """

    name: str = "architectures-teacher"
    task: str = "teacher"
    d: int = 6
    T: int = 32
    teacher_std: float | None = None
    families: tuple[str, ...] = FIG4_FAMILIES
    targets: tuple[int, ...] = (3000,)
    seeds: tuple[int, ...] = (0, 1, 2)
    lr_grid: tuple[float, ...] = ()
    lrs: tuple[tuple[str, float], ...] = ()
    init_scales: tuple[tuple[str, float], ...] = ()
    eval_batch: int = 2048
    train: TrainConfig = field(default_factory=lambda: TrainConfig(steps=100_000))
    compile_cells: bool = False
    groups_together: bool = False

    def __post_init__(self) -> None:
        if self.task not in ("teacher", "regression"):
            raise ValueError(f"unknown task {self.task!r}; expected 'teacher' or 'regression'")
        if not self.seeds or not self.targets or not self.families:
            raise ValueError("families, targets and seeds must each name at least one value")
        for name in self.families:
            family(name)  # an unknown family is an error that lists the known ones
        unknown = {f for f, _ in self.lrs} - set(self.families)
        if unknown:
            raise ValueError(f"lrs names families not in the run: {sorted(unknown)}")
        scaled = {f for f, _ in self.init_scales}
        if scaled - set(self.families) or scaled - set(LRU_FAMILIES):
            raise ValueError(
                f"init_scales must name LRU families of the run ({', '.join(LRU_FAMILIES)}), "
                f"got {sorted(scaled)}"
            )

    def data_task(self, seed: int):
        """The task of the members with this seed (teacher-student: its own teacher)."""
        if self.task == "regression":
            return InContextRegression()
        return TeacherStudentTask.from_seed(
            self.d, seed=derive_seed(seed, "teacher"), T=self.T, std=self.teacher_std
        )

    def groups(self) -> list[tuple[str, int, float]]:
        """(family, target, lr) of every ensemble trained: families outer, then targets, lrs."""
        lrs = dict(self.lrs)
        rates = self.lr_grid or (None,)
        return [
            (f, t, lr if lr is not None else lrs.get(f, self.train.lr))
            for f in self.families
            for t in self.targets
            for lr in rates
        ]

    def batches(self) -> list[list[int]]:
        """Indices of ``groups`` per ensemble: each alone, or a family's (``groups_together``)."""
        if not self.groups_together:
            return [[k] for k in range(len(self.groups()))]
        together: dict[str, list[int]] = {}
        for k, (f, _, _) in enumerate(self.groups()):
            together.setdefault(f, []).append(k)
        return list(together.values())

    def jobs(self, device: str = "cpu") -> list[Job]:
        """One job per ensemble of ``batches``: key "group-k", or "groups-k-l" for a family's."""
        jobs = []
        for ks in self.batches():
            f, t, lr = self.groups()[ks[0]]
            if len(ks) == 1:
                label = f"group {ks[0]}: {f}, {t} parameters, lr {lr:g}"
                jobs.append(Job(key=f"group-{ks[0]}", label=label, part=ks[0]))
                continue
            label = f"groups {ks[0]}-{ks[-1]}: {f}, {len(ks)} groups together"
            key = f"groups-{ks[0]}-{ks[-1]}"
            jobs.append(Job(key=key, label=label, part=",".join(str(k) for k in ks)))
        return jobs

    def train_job(self, job: Job, *, checkpoint: Path | None = None, progress: bool = True):
        """Train one group (``train_group``) or several (``train_together``, rows under "rows")."""
        if isinstance(job.part, str):
            ks = [int(k) for k in job.part.split(",")]
            return {"rows": self.train_together(ks, checkpoint=checkpoint, progress=progress)}
        return self.train_group(int(job.part), checkpoint=checkpoint, progress=progress)

    def assemble(self, jobs: list[Job], outputs: list[dict]):
        """The groups' rows in ``groups`` order, stacked (``stack_rows``); metrics: time, groups."""
        rows: dict[int, dict] = {}
        for job, out in zip(jobs, outputs, strict=True):
            ks = [int(k) for k in str(job.part).split(",")]
            rows.update(zip(ks, out["rows"] if isinstance(job.part, str) else [out], strict=True))
        order = sorted(rows)
        groups = [self.groups()[k] for k in order]
        tensors = self.stack_rows([rows[k] for k in order], groups)
        wall = sum(float(r["wall_time"]) for r in rows.values())
        metrics = {"train_wall_time_s": wall, "groups": [list(g) for g in groups]}
        return tensors, metrics

    def stack_rows(self, rows: list[dict], groups: list[tuple[str, int, float]]) -> dict:
        """The tensors of an entry from the rows of ``train_group`` (G groups, E seeds)."""
        tensors = {
            "widths": torch.tensor([int(r["width"]) for r in rows]),
            "counts": torch.tensor([int(r["count"]) for r in rows]),
            "lrs": torch.tensor([lr for _, _, lr in groups], dtype=torch.float64),
            "eval_loss": torch.stack([r["eval_loss"] for r in rows]),  # (G, E)
            "final_train_loss": torch.stack([r["losses"][-1] for r in rows]),  # (G, E)
            "train_curves": torch.stack([r["losses"] for r in rows]),  # (G, K, E) per window
            "step_time": torch.tensor([float(r["wall_time"]) / self.train.steps for r in rows]),
        }
        if all("params" in r for r in rows):
            tensors["params"] = {f"group{k}": r["params"] for k, r in enumerate(rows)}
        if self.task == "regression":
            tensors["ood_loss"] = torch.stack([r["ood_loss"] for r in rows])
        return tensors

    def train_group(self, k: int, *, checkpoint: Path | None = None, progress: bool = True) -> dict:
        """Train group k of ``groups``; its row: width, count, params, losses, wall_time,
        eval_loss (and ood_loss for regression)."""
        return self.train_together([k], checkpoint=checkpoint, progress=progress)[0]

    def train_together(
        self, ks: list[int], *, checkpoint: Path | None = None, progress: bool = True
    ) -> list[dict]:
        """Train groups ``ks`` (one family) as one ensemble, zero-padded to the largest width
        (``models.padding``), each at its own rate: their ``train_group`` rows, up to rounding."""
        groups = [self.groups()[k] for k in ks]
        if len({f for f, _, _ in groups}) != 1:
            raise ValueError(f"groups trained together must be of one family: {groups}")
        fam_name, _, lr = groups[0]
        fam = family(fam_name)
        rates = [r for _, _, r in groups for _ in self.seeds]
        member_lrs = None if len(ks) == 1 or len(set(rates)) == 1 else rates
        widths, inits = zip(*(self._init_group(k) for k in ks), strict=True)
        # the padding starts at zero and stays exactly zero (``models.padding``): no masks,
        # so the step launches the kernels of an unpadded one
        params = pad_members(inits, widths)[0] if len(ks) > 1 else inits[0]
        res = train(
            [self.data_task(s) for s in self.seeds] * len(ks),
            params,
            dataclasses.replace(self.train, lr=lr),
            data_seeds=[derive_seed(s, "data") for s in self.seeds] * len(ks),
            no_decay=fam.no_decay,
            forward=self.forward(fam),
            checkpoint=checkpoint,
            progress=progress,
            desc=f"{self.name} {fam_name} {groups[0][1] if len(ks) == 1 else f'x{len(ks)}'}",
            on_nonfinite="keep",  # a diverged member is a result here (best_lrs, family_losses)
            member_lrs=member_lrs,
        )
        trained = {name: v.to(torch.float64) for name, v in res.params.items()}
        parts = split_members(trained, inits, widths) if len(ks) > 1 else [trained]
        E = len(self.seeds)
        return [
            self._row(fam, w, p, res.losses[:, i * E : (i + 1) * E], res.wall_time / len(ks))
            for i, (w, p) in enumerate(zip(widths, parts, strict=True))
        ]

    def _init_group(self, k: int) -> tuple[int, dict]:
        """(width, params (E, ...)) of group k at initialisation (``init_scales`` applied)."""
        fam_name, target, _ = self.groups()[k]
        task = self.data_task(self.seeds[0])
        fam = family(fam_name)
        width = width_for(fam, task.d, task.d_out, target)
        g = torch.Generator().manual_seed(derive_seed(k, f"init/{fam_name}/{target}"))
        params = fam.init(task.d, task.d_out, width, len(self.seeds), g, torch.float64)
        scales = dict(self.init_scales)
        if fam_name in scales:
            params = scale_linear(params, scales[fam_name])
        return width, params

    def _row(self, fam, width: int, p: dict, losses: torch.Tensor, wall_time: float) -> dict:
        """A group's row from its trained members ``p`` and their logged ``losses`` (K, E)."""
        row = {
            "width": width,
            "count": parameter_count(p),
            "params": p,
            "losses": losses.to(torch.float64).clone(),
            "wall_time": wall_time,
            "eval_loss": self._eval(fam, p, ood=False),
        }
        if self.task == "regression":
            row["ood_loss"] = self._eval(fam, p, ood=True)
        return row

    def forward(self, fam):
        """None for the gated RNN (the engine's fused path), else the family's forward
        (``Family.compiled`` with ``compile_cells``)."""
        if fam.name == "gated":
            return None
        if self.compile_cells and fam.compiled is not None:
            return fam.compiled
        return fam.forward

    def _eval(self, fam, params: dict, ood: bool) -> torch.Tensor:
        """(E,) held-out loss of every member on ``eval_batch`` sequences of its own task."""
        tasks = [self.data_task(s).ood() if ood else self.data_task(s) for s in self.seeds]
        x, y = held_out_batch(tasks, self.seeds, self.eval_batch, "eval-ood" if ood else "eval")
        with torch.no_grad():
            y_hat = fam.forward(x, params)
        t0 = self.data_task(self.seeds[0])
        loss = masked_mse(y_hat, y, t0.loss_mask, t0.loss_scale)  # (E,)
        if self.task == "teacher":  # normalised: 1 is the loss of predicting 0
            loss = loss / y.square().mean(dim=(1, 2, 3))
        return loss


def best_lrs(config: ArchitectureConfig, tensors: dict) -> tuple[tuple[str, float], ...]:
    """Each family's rate from a sweep (``lr_grid``): the lowest seed-mean held-out loss (the
    largest target of the sweep; a diverged member counts as infinitely bad)."""
    if not config.lr_grid:
        raise ValueError("best_lrs needs a sweep: a config with an lr_grid")
    loss = tensors["eval_loss"].nan_to_num(nan=float("inf"))
    best = {}
    for k, (fam, target, lr) in enumerate(config.groups()):
        if target != max(config.targets):  # the largest: every family trains there
            continue
        score = float(loss[k].mean())
        if fam not in best or score < best[fam][1]:
            best[fam] = (lr, score)
    return tuple((f, best[f][0]) for f in config.families)


#: the learning rates every family is tried at (the same search for all)
LR_GRID = (3e-3, 1e-2, 3e-2, 1e-1)


def architectures_sweep_config(profile: str, task: str = "teacher") -> ArchitectureConfig:
    """The learning-rate sweep of Fig. 4A ("teacher") or 4B ("regression") in a profile: every
    family at every rate of LR_GRID, at the main run's middle parameter target, fewer steps."""
    main = architectures_config(profile, task)
    steps = {"smoke": 4, "quick": 300}.get(profile, 20_000)
    targets = main.targets[len(main.targets) // 2 :][:1]
    tc = dataclasses.replace(main.train, steps=steps, log_every=min(steps, main.train.log_every))
    tc = dataclasses.replace(tc, chunk_steps=min(steps, tc.chunk_steps), checkpoint_every=0)
    return dataclasses.replace(
        main, name=f"{main.name}-lr", targets=targets, lr_grid=LR_GRID, train=tc
    )


def architectures_config(
    profile: str, task: str = "teacher", lrs: tuple[tuple[str, float], ...] = ()
) -> ArchitectureConfig:
    """Fig. 4A ("teacher": d = 6 teacher-student) or Fig. 4B ("regression") in a profile.

    paper   T = 32 (teacher), 5 seeds, targets 1,000 to 30,000, 100,000 steps of batch 64 (ours:
            the paper gives neither steps nor rates here), ``compile_cells``, ``groups_together``,
            mode "compiled" (the same training up to rounding).
    quick   T = 8 (teacher; the construction is exact for every T), 3 seeds, targets 500 to
            4,000, 1,200 steps (teacher) or 1,000 (regression, a costlier step).
    smoke   2 seeds, two small targets, 4 steps: only proves the code path.
    """
    check_profile(profile)
    name = "architectures-teacher" if task == "teacher" else "architectures-regression"
    common = {"name": name, "task": task, "teacher_std": TEACHER_STD, "lrs": lrs}
    if profile == "smoke":
        tc = TrainConfig(steps=4, log_every=2, chunk_steps=2)
        return ArchitectureConfig(
            **common, T=8, targets=(300, 600), seeds=(0, 1), eval_batch=64, train=tc
        )
    if profile == "quick":
        steps = 1200 if task == "teacher" else 1000  # what fits each chapter's few minutes
        tc = TrainConfig(steps=steps, log_every=50, chunk_steps=50, checkpoint_every=500)
        return ArchitectureConfig(
            **common, T=8, targets=(500, 1000, 2000, 4000), seeds=(0, 1, 2), eval_batch=2048,
            train=tc,
        )  # fmt: skip
    # data drawn 250 steps at a time (20 members: about 0.5 GB of float32 a chunk)
    tc = TrainConfig(
        steps=100_000, log_every=1000, chunk_steps=250, checkpoint_every=10_000, mode="compiled"
    )
    return ArchitectureConfig(
        **common, T=32, targets=(1000, 3000, 10_000, 30_000), seeds=(0, 1, 2, 3, 4),
        eval_batch=8192, train=tc, compile_cells=True, groups_together=True,
    )  # fmt: skip


def at_grid_edge(config: ArchitectureConfig, lrs) -> list[str]:
    """The families whose chosen rate is the largest of the sweep's grid: their best rate may lie
    beyond it (a short sweep also favours large rates: its horizon is short)."""
    top = max(config.lr_grid)
    return [f for f, lr in lrs if lr == top]
