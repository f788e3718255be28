"""One call to train a student, one to ask what it learned (Sec. 4.1 for your own runs).

    task = teacher_task(d=4, seed=3)                 # a teacher and its sequences (a preset's T)
    trained = fit(student(task, seed=3), task)       # the "identify" preset: Sec. 4.1's optimiser
    print(identify(trained, task))                   # counts, lam groups, scores, polynomial

``fit`` trains one student with the engine (``engine.train_ensemble``, an ensemble of one) and
returns it trained; ``identify`` runs the reverse engineering of Sec. 4.1
(``analysis.reverse_engineer``) and sets the result beside the construction's counts. Sweeps of
many students use the engine and ``experiments`` directly.

Glossary (code name -> meaning):
    teacher_task   a TeacherStudentTask with a preset's T and teacher scale
    student        a fresh GatedRNN of a preset's size for a task
    fit            train a student on a task with a preset (and overrides); the trained student
    Identification what ``identify`` found: counts, lam groups, Score KV / Q, distance
    identify       reverse-engineer a trained student against its teacher
    recorded_student  a trained student shipped with the package, and its task
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from .analysis import network
from .analysis.consolidation import construction_counts
from .analysis.reverse_engineer import ReverseEngineering, reverse_engineer
from .analysis.thresholds import LAM_TOL, PRUNE_TOL
from .engine import train_ensemble, unstack_students
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
    "recorded_student",
]

#: an identification reads "the construction" when both scores are below this (Table 1: ~1e-3)
SCORE_TOL = 1e-2


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


def fit(
    student: GatedRNN,
    task: TeacherStudentTask,
    *,
    preset: str | Preset = "identify",
    seed: int = 0,
    progress: bool = False,
    history: bool = False,
    **overrides,
):
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

    ``hidden``, ``output``: neurons left after pruning at ``prune_tol``; ``lam_one``,
    ``lam_zero``, ``lam_between``: the pruned hidden neurons by lam (within ``lam_tol`` of 1,
    of 0, neither); ``score_kv``, ``score_q``: 1 - R^2 of the key-value and query neurons
    (0: the construction's); ``poly_distance``: the student's output polynomial against the
    teacher's (0: the same function); ``construction``: the construction's (hidden, lam ~ 1,
    lam ~ 0) for this d; ``details``: the whole ``ReverseEngineering``.
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
        verdict = (
            "the construction, neuron for neuron"
            if self.is_construction
            else "attention, with more neurons than the construction"
            if self.learned_attention
            else "not (yet) the construction's states"
        )
        return "\n".join(
            [
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
    lam_tol: float = LAM_TOL,
) -> Identification:
    """Reverse-engineer ``student`` against ``teacher`` (a task, whose T is used unless ``T``
    is given, or an attention layer, which needs ``T``)."""
    if isinstance(teacher, TeacherStudentTask):
        T = teacher.T if T is None else T
        teacher = teacher.teacher
    if not isinstance(teacher, LinearSelfAttention):
        raise TypeError(f"teacher must be a task or a LinearSelfAttention, not {type(teacher)}")
    if T is None:
        raise ValueError("identify against an attention layer needs T (the sequence length)")
    net = network(student)  # reverse_engineer names both sizes when the d's differ
    if teacher.W_V.dtype != torch.float64:  # the analysis runs in float64; the caller's is kept
        teacher = copy.deepcopy(teacher).double()
    with torch.no_grad():
        r = reverse_engineer(net, teacher, T=T, prune_tol=prune_tol, lam_tol=lam_tol)
    c = r.groups.counts()
    counts = construction_counts(teacher.d)
    return Identification(
        hidden=r.pruned.net.n,
        output=r.pruned.net.m,
        lam_one=c["one"],
        lam_zero=c["zero"],
        lam_between=c["between"],
        score_kv=float(r.score_kv),
        score_q=float(r.score_q),
        poly_distance=float(r.poly_distance),
        construction=(counts["one"] + counts["zero"], counts["one"], counts["zero"]),
        details=r,
    )


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
    sizes = [tuple(s) for s in result.tensors["sizes"].tolist()]
    trained = unstack_students(result.tensors["params"], sizes)[member]
    return trained, result.config.task(int(seeds[member]))
