"""Readings of the chapter "Beyond the paper": compressed output gating and capped memory, as
rows of numbers (the recorded students' output-gating counts: ``readings.beyond_counts``).

Glossary (code name -> symbol):
    x        T (1 - lam_max), the memory deficit of a capped key-value neuron
    e_p(x)   the constant-input error for T -> infinity at fixed x, p banks:
             int_0^1 (1 - exp(-x u))^p du  (``law``); e_1(x) = 1 - (1 - exp(-x)) / x"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..analysis import network, prune
from ..analysis.thresholds import LAM_TOL, PRUNE_TOL
from ..constructions import capped_memory as cm
from ..constructions import compressed_output as co
from ..constructions.gated_rnn import neuron_count
from ..experiments.teacher_student import TeacherStudentConfig
from .sweep_losses import normalised_losses


def law(x: np.ndarray, banks: int = 1) -> np.ndarray:
    """e_p(x) = int_0^1 (1 - exp(-x u))^p du, the T -> infinity limit of ``planted_error``
    at fixed x = T (1 - lam) (trapezoidal rule on 2001 points)."""
    x = np.asarray(x, dtype=float)
    u = np.linspace(0.0, 1.0, 2001)
    return np.trapezoid((1.0 - np.exp(-np.multiply.outer(x, u))) ** banks, u, axis=-1)


def seed_median(rows: Sequence, T: int, cap: float, field: str = "normalised_loss") -> float:
    """Median over seeds of ``field`` of the ``CappedStudent`` rows at (T, cap) (cap 1.0: none)."""
    return float(np.median([getattr(r, field) for r in rows if (r.T, r.lam_max) == (T, cap)]))


def memory_split(rnn) -> tuple[int, int]:
    """(hidden neurons with lam = 1, with lam = 0) of a constructed gated RNN."""
    return int((rnn.lam == 1).sum()), int((rnn.lam == 0).sum())


def neuron_bounds(ds: Iterable[int]) -> list[dict]:
    """One row per d: ``"n"``, ``"m"`` of the compressed construction, ``"m_full"`` (d^2, App. A.1 /
    A.3) and ``"bound"``, the lower bound on m (the column rank of Psi(q))."""
    rows = []
    for d in ds:
        c = co.compressed_neuron_count(d)
        bound = co.column_rank(co.symmetric_product_matrix(d))
        m_full = neuron_count("symmetric", d)["m"]
        rows.append({"d": d, "n": c["n"], "m_full": m_full, "m": c["m"], "bound": bound})
    return rows


def planted_max_error(
    lams: Iterable[float], Ts: Iterable[int], banks: Iterable[int] = (1, 2)
) -> float:
    """The largest |``constant_input_error`` - ``planted_error``| over every lam, T and banks."""
    return max(
        abs(cm.constant_input_error(lam, T, banks=p) - cm.planted_error(lam, T, p))
        for lam in lams
        for T in Ts
        for p in banks
    )


def law_rows(law_points: Mapping[int, Sequence]) -> list[dict]:
    """One row per point: the measured errors with 1 and 2 banks beside the law e_1(x), e_2(x)
    (``law_points``: banks -> ``CappedPoint``s, the same points in the same order for 1 and 2)."""
    return [
        {
            "lam_max": a.lam_max,
            "T": a.T,
            "x": a.x,
            "error_1": a.error,
            "law_1": float(law(a.x, 1)),
            "error_2": b.error,
            "law_2": float(law(b.x, 2)),
        }
        for a, b in zip(law_points[1], law_points[2], strict=True)
    ]


@dataclasses.dataclass(frozen=True)
class CappedStudent:
    """One trained member with a cap: what its lam ~ 1 group turned into."""

    T: int
    lam_max: float
    seed: int
    normalised_loss: float
    n: int  # hidden neurons after pruning
    m: int  # output-gating neurons after pruning
    at_cap: int  # pruned neurons with 1 - lam <= 2 (1 - lam_max); no cap: lam > 0.99 (Fig. 2B)
    near_zero: int  # pruned hidden neurons with lam < LAM_TOL (0.01)
    lam_top: float  # the largest lam of the pruned network
    lams: tuple[float, ...] = ()  # every lam of the pruned network, largest first


def capped_students(
    config: TeacherStudentConfig, run, *, prune_tol: float = PRUNE_TOL
) -> list[CappedStudent]:
    """A ``CappedStudent`` per member of ``run`` (``experiments.run(config)`` or recorded)."""
    lam_max = config.train.lam_max
    width = 2 * (1 - lam_max) if lam_max < 1 else LAM_TOL
    _, nl = normalised_losses(config, run.tensors["eval_loss"])
    rows = []
    for e, (student, seed) in enumerate(zip(run.students(), config.seeds, strict=True)):
        pr = prune(network(student), prune_tol)
        lam = pr.net.lam
        rows.append(
            CappedStudent(
                T=config.T,
                lam_max=lam_max,
                seed=int(seed),
                normalised_loss=float(nl[0, e]),
                n=pr.net.n,
                m=pr.net.m,
                at_cap=int((1 - lam <= width).sum()),
                near_zero=int((lam < LAM_TOL).sum()),
                lam_top=float(lam.max()) if lam.numel() else float("nan"),
                lams=tuple(sorted(lam.tolist(), reverse=True)),
            )
        )
    return rows


@dataclasses.dataclass(frozen=True)
class CappedSource:
    """Where the students of one capped configuration come from (``capped_runs``)."""

    T: int
    lam_max: float
    steps: int
    n: int  # n = m of the students
    seeds: tuple[int, ...]
    recorded: str | None  # the recorded run's name; None: trained here
    train_seconds: float


def capped_runs(configs: Mapping, profile: str) -> tuple[dict, list, dict, dict, list]:
    """The students of ``configs`` ((T, lam_max) -> config, ``capped_memory_configs``), each read
    from the recorded run ``<name>-<profile>`` where its config matches, else trained here.
    Returns (runs by key, their ``CappedStudent`` rows, key -> the capped construction's loss per
    seed with one bank, the same with two, a ``CappedSource`` per config)."""
    from .. import experiments
    from ..experiments import capped_memory as cx

    runs, rows, construction, two_banks, sources = {}, [], {}, {}, []
    for key, cfg in configs.items():
        name = f"{cfg.name}-{profile}"
        rec = experiments.recorded(name) if name in experiments.recorded_names() else None
        if rec is not None and rec.config == cfg:
            runs[key] = rec
        else:
            runs[key] = experiments.run(cfg, progress=False)
            name = None
        rows += capped_students(cfg, runs[key])
        construction[key] = cx.capped_construction_loss(cfg)
        two_banks[key] = cx.capped_construction_loss(cfg, banks=2)
        wall = runs[key].metrics["train_wall_time_s"]
        steps, seeds = cfg.train.steps, tuple(cfg.seeds)
        sources.append(CappedSource(key[0], key[1], steps, cfg.n, seeds, name, wall))
    return runs, rows, construction, two_banks, sources


def student_rows(
    rows: Sequence, configs: Mapping, construction: Mapping, two_banks: Mapping
) -> list[dict]:
    """One row per ``CappedStudent``, beside the capped construction's loss on its teacher with
    one bank and two (``construction``, ``two_banks``: key -> a loss per seed of ``configs``)."""
    out = []
    for r in rows:
        key = (r.T, r.lam_max)
        e = list(configs[key].seeds).index(r.seed)
        out.append(
            {
                "T": r.T,
                "cap": r.lam_max,
                "seed": r.seed,
                "loss": r.normalised_loss,
                "construction": construction[key][e],
                "two_banks": two_banks[key][e],
                "n": r.n,
                "m": r.m,
                "at_cap": r.at_cap,
                "near_zero": r.near_zero,
                "lam_top": r.lam_top,
            }
        )
    return out


def capped_medians(rows: Sequence, construction: Mapping) -> dict[str, float]:
    """The seed medians of the capped-training scorecard rows: ``"growth"`` (loss at T = 32 / 8,
    cap 0.9), ``"ratio_099"`` (cap 0.99 / uncapped, T = 32), ``"vs_construction"`` (trained /
    capped construction at (32, 0.9)) and ``"at_cap"`` (neurons at the cap 0.99, T = 32)."""
    return {
        "growth": seed_median(rows, 32, 0.9) / seed_median(rows, 8, 0.9),
        "ratio_099": seed_median(rows, 32, 0.99) / seed_median(rows, 32, 1.0),
        "vs_construction": seed_median(rows, 32, 0.9) / float(np.median(construction[(32, 0.9)])),
        "at_cap": seed_median(rows, 32, 0.99, "at_cap"),
    }
