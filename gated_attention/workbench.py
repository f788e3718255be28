"""One call to train a student, one to ask what it learned (Sec. 4.1 for your own runs).

    task = teacher_task(d=4, seed=3)                 # a teacher and its sequences (a preset's T)
    trained = fit(student(task, seed=3), task)       # the "identify" preset: Sec. 4.1's optimiser
    print(identify(trained, task))                   # counts, lam groups, scores, polynomial

Sweeps of many students use the engine and ``experiments`` directly.

Glossary (code name -> meaning):
    teacher_task   a TeacherStudentTask with a preset's T and teacher scale
    student        a fresh GatedRNN of a preset's size for a task
    fit            train a student with a preset (``engine.train_ensemble``, an ensemble of one)
    identify       Sec. 4.1's reverse engineering (``analysis.reverse_engineer``) of a student
    Identification what ``identify`` found: counts, lam groups, Score KV / Q, distance
    teacher_construction  the construction (App. A.3 or A.4) a teacher's student is compared with
    recorded_student  a trained student shipped with the package, and its task
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal, overload

import torch

from .analysis import network
from .analysis.reverse_engineer import ReverseEngineering, reverse_engineer
from .analysis.thresholds import LAM_TOL, PRUNE_TOL
from .constructions.gated_rnn import neuron_count
from .engine import TrainResult, train_ensemble, unstack_students
from .experiments.presets import PRESETS, Preset, with_overrides
from .experiments.presets import preset as get_preset
from .models import GatedRNN, LinearSelfAttention
from .tasks import TeacherStudentTask

__all__ = [
    "PRESETS",
    "teacher_task",
    "student",
    "fit",
    "Identification",
    "identify",
    "teacher_construction",
    "recorded_student",
]

#: an identification reads "the construction" when both scores are below this (Table 1: ~1e-3)
SCORE_TOL = 1e-2

#: a teacher's singular values below this times its largest count as zero (its ranks, for
#: ``teacher_construction``): far above float64 rounding, far below a random teacher's spread
RANK_RTOL = 1e-6


def teacher_task(
    d: int = 4, *, seed: int = 0, preset: str | Preset = "identify"
) -> TeacherStudentTask:
    """A teacher-student task: a random attention layer of dimension ``d`` (its entries with the
    preset's scale) and sequences of the preset's length T."""
    p = get_preset(preset)
    return TeacherStudentTask.from_seed(d, seed=seed, T=p.T, std=p.teacher_std)


def student(
    task: TeacherStudentTask,
    n: int | None = None,
    *,
    seed: int = 0,
    preset: str | Preset = "identify",
) -> GatedRNN:
    """A fresh GatedRNN for ``task`` with n = m neurons (default: the preset's size)."""
    n = get_preset(preset).n if n is None else n
    return GatedRNN(task.d, n, n, d_out=task.d_out, seed=seed)


@overload
def fit(
    student: GatedRNN,
    task: TeacherStudentTask,
    *,
    preset: str | Preset = ...,
    seed: int = ...,
    progress: bool = ...,
    history: Literal[False] = ...,
    **overrides: Any,
) -> GatedRNN: ...


@overload
def fit(
    student: GatedRNN,
    task: TeacherStudentTask,
    *,
    preset: str | Preset = ...,
    seed: int = ...,
    progress: bool = ...,
    history: Literal[True],
    **overrides: Any,
) -> tuple[GatedRNN, TrainResult]: ...


def fit(
    student: GatedRNN,
    task: TeacherStudentTask,
    *,
    preset: str | Preset = "identify",
    seed: int = 0,
    progress: bool = False,
    history: bool = False,
    **overrides: Any,
) -> GatedRNN | tuple[GatedRNN, TrainResult]:
    """Train ``student`` on ``task`` with the optimiser of ``preset`` (``PRESETS``), any of its
    TrainConfig fields overridden by keyword (``steps=20_000``, ``lr=...``); ``seed`` picks the
    data stream. Returns the trained student (a new GatedRNN, float64; ``student`` is left as
    it was), and with ``history=True`` the pair (student, TrainResult) with the losses."""
    if not isinstance(student, GatedRNN):
        raise TypeError(f"student must be a GatedRNN, got {type(student).__name__}")
    if not isinstance(task, TeacherStudentTask):
        raise TypeError(f"task must be a TeacherStudentTask, got {type(task).__name__}")
    # a student of another d or d_out: the engine refuses it before any step, naming both
    config = with_overrides(get_preset(preset), **overrides).train
    result = train_ensemble([task], [student], config, data_seeds=[seed], progress=progress)
    (trained,) = unstack_students(result.params, [(student.n, student.m)])
    return (trained, result) if history else trained


@dataclass(frozen=True)
class Identification:
    """What a trained student computes, against its teacher (Sec. 4.1, Table 1).

    ``hidden``, ``output``: neurons left after pruning; ``lam_one``, ``lam_zero``,
    ``lam_between``: the pruned hidden neurons by lam (within ``LAM_TOL`` of 1, of 0, neither);
    ``score_kv``, ``score_q``: 1 - R^2 of the key-value and query neurons (0: the construction's);
    ``poly_distance``: the output polynomial's distance to the teacher's (0: the same function);
    ``construction``: (hidden, lam ~ 1, lam ~ 0) of ``teacher_construction``.
    """

    hidden: int
    output: int
    lam_one: int
    lam_zero: int
    lam_between: int
    score_kv: float
    score_q: float
    poly_distance: float
    construction: tuple[int, int, int]
    construction_name: str
    details: ReverseEngineering

    @property
    def learned_attention(self) -> bool:
        """Both scores below SCORE_TOL: its key-value and query neurons are the construction's
        (a finding about the states, not the counts)."""
        return self.score_kv < SCORE_TOL and self.score_q < SCORE_TOL

    @property
    def is_construction(self) -> bool:
        """Learned attention with exactly the construction's counts."""
        counts = (self.hidden, self.lam_one, self.lam_zero)
        return self.learned_attention and self.lam_between == 0 and counts == self.construction

    def __str__(self) -> str:
        h, one, zero = self.construction
        if self.is_construction:
            verdict = "the construction, neuron for neuron"
        elif not self.learned_attention:
            verdict = "not (yet) the construction's states"
        elif self.hidden != h:
            more = "more" if self.hidden > h else "fewer"
            verdict = f"attention, with {more} neurons than the construction"
        else:
            verdict = "attention, with the construction's count in other lam groups"
        return "\n".join(
            [
                f"construction compared with    {self.construction_name}",
                f"hidden neurons after pruning  {self.hidden} (construction: {h})",
                f"  lam ~ 1 / lam ~ 0 / between  {self.lam_one} / {self.lam_zero} / "
                f"{self.lam_between} (construction: {one} / {zero} / 0)",
                f"output neurons after pruning  {self.output}",
                f"Score KV, Score Q             {self.score_kv:.2g}, {self.score_q:.2g}",
                f"polynomial distance           {self.poly_distance:.2g}",
                f"what it computes              {verdict}",
            ]
        )


def identify(
    student: GatedRNN,
    teacher: TeacherStudentTask | LinearSelfAttention,
    *,
    T: int | None = None,
    prune_tol: float = PRUNE_TOL,
) -> Identification:
    """Reverse-engineer ``student`` against ``teacher`` (a task, whose T is used unless ``T``
    is given, or an attention layer, which needs ``T``), lam groups within ``LAM_TOL``; the
    counts are compared with ``teacher_construction(teacher)``.

    A side-gating student (App. A.2) is a ValueError naming the steps of ``analysis`` that apply
    to it: Sec. 4.1 merges output-gating neurons and reads queries off lam ~ 0 ones (it has none).
    """
    if isinstance(teacher, TeacherStudentTask):
        T = teacher.T if T is None else T
        teacher = teacher.teacher
    if not isinstance(teacher, LinearSelfAttention):
        raise TypeError(f"teacher must be a task or a LinearSelfAttention, not {type(teacher)}")
    if T is None:
        raise ValueError("identify against an attention layer needs T (the sequence length)")
    net = network(student)  # reverse_engineer names both sizes when the d's differ
    if net.side:
        raise ValueError(
            "identify needs an input-output gating student (Sec. 4.1); this one has side gating "
            "(App. A.2): no output-gating neurons to merge and no lam ~ 0 query neurons (its "
            "queries are the side gate). For it use analysis.prune, analysis.lam_groups, "
            "analysis.score_kv and analysis.polynomial_distance directly, and compare its "
            f"lam ~ 1 neurons with neuron_count('side', {teacher.d})['n'] = d^2 = {teacher.d**2}"
        )
    if teacher.W_V.dtype != torch.float64:  # the analysis runs in float64; the caller's is kept
        teacher = copy.deepcopy(teacher).double()
    with torch.no_grad():
        r = reverse_engineer(net, teacher, T=T, prune_tol=prune_tol, lam_tol=LAM_TOL)
    c = r.groups.counts()
    name, construction = teacher_construction(teacher)
    return Identification(
        hidden=r.pruned.net.n,
        output=r.pruned.net.m,
        lam_one=c["one"],
        lam_zero=c["zero"],
        lam_between=c["between"],
        score_kv=float(r.score_kv),
        score_q=float(r.score_q),
        poly_distance=float(r.poly_distance),
        construction=construction,
        construction_name=name,
        details=r,
    )


def teacher_construction(teacher: LinearSelfAttention) -> tuple[str, tuple[int, int, int]]:
    """The construction a student of ``teacher`` is compared with: (its name, its (hidden,
    lam ~ 1, lam ~ 0) counts), from the ranks r_V of W_V and r_KQ of W_K^T W_Q
    (``torch.linalg.matrix_rank`` at relative tolerance ``RANK_RTOL``).

    Both of full rank d (and W_V square): the symmetric construction (App. A.3), d(d+1)/2
    key-value and d query neurons. Either rank-deficient: the low-rank one (App. A.4),
    ``neuron_count("low_rank", d, r_V, r_KQ)``: r_V r_KQ key-value and r_KQ query neurons.
    A teacher that is identically zero needs none: (0, 0, 0).
    """
    if not isinstance(teacher, LinearSelfAttention):
        raise TypeError(f"teacher must be a LinearSelfAttention, not {type(teacher).__name__}")
    with torch.no_grad():
        W_V, W_K, W_Q = (w.detach().double() for w in (teacher.W_V, teacher.W_K, teacher.W_Q))
        r_V = int(torch.linalg.matrix_rank(W_V, rtol=RANK_RTOL))
        r_KQ = int(torch.linalg.matrix_rank(W_K.T @ W_Q, rtol=RANK_RTOL))
    d = teacher.d
    if r_V == 0 or r_KQ == 0:
        return "none (the teacher is identically zero)", (0, 0, 0)
    if teacher.d_v == d and r_V == d and r_KQ == d:
        n = neuron_count("symmetric", d)["n"]
        return f"symmetric (App. A.3; W_V and W_K^T W_Q of full rank {d})", (n, n - d, d)
    n = neuron_count("low_rank", d, r_V, r_KQ)["n"]
    name = f"low rank (App. A.4; rank W_V = {r_V}, rank W_K^T W_Q = {r_KQ})"
    return name, (n, n - r_KQ, r_KQ)


def recorded_student(run: str, member: int = 0) -> tuple[GatedRNN, TeacherStudentTask]:
    """Member ``member`` of the recorded teacher-student run ``run`` (shipped with the package,
    ``experiments.recorded_names()``) as a GatedRNN (float64), with the task it was trained on."""
    from .experiments import recorded
    from .experiments.teacher_student import TeacherStudentConfig

    result = recorded(run)
    if not isinstance(result.config, TeacherStudentConfig):
        raise ValueError(f"{run} is not a teacher-student run: {type(result.config).__name__}")
    seeds = result.tensors["seeds"].tolist()
    if not (isinstance(member, int) and 0 <= member < len(seeds)):
        raise ValueError(f"member {member!r} out of range: {run} has {len(seeds)} members")
    return result.students()[member], result.config.task(int(seeds[member]))
