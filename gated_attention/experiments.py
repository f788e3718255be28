"""Profiles of the experiments, their frozen configs, and the results cache (DESIGN.md).

Profiles (one papermill parameter, ``profile``, selects one):
    smoke   seconds per chapter; the tests use it; proves the code path runs end to end.
    quick   the default of ``make book``: the whole book in minutes on a 2-core laptop CPU,
            still reproducing every qualitative finding of the paper.
    paper   the paper's own sizes and step counts.

Glossary (code name -> paper symbol -> section):
    TeacherStudentConfig  the teacher-student experiment (d, T, n = m, seeds)         Sec. 4.1-4.2
    sizes                 n = m of each ensemble member (a Fig. 3A/B sweep)           Sec. 4.2
    teacher_rank          rank of the teacher's matrices (6 for d = 12, Fig. 3B)      Sec. 4.2
    run(config)           the results cache: compute once, load afterwards            DESIGN.md

An experiment config is any frozen dataclass with a ``name`` (str) and a method
``compute(*, checkpoint, progress) -> (tensors, metrics)``: ``tensors`` a (nested) dict of
tensors, ``metrics`` a JSON-able dict; ``checkpoint`` a file path the computation may save its
state to and resume from (``training.train(checkpoint=...)`` does both). ``run`` does the rest.

The results cache: ``run(config)`` returns the entry ``<cache>/<name>-<hash>/`` when it is
complete and intact, else computes and stores it. ``<cache>`` is ``results/`` at the repository
root unless the environment variable GATED_ATTENTION_CACHE names another folder. The hash covers
the config and the source of the package's computing modules (``code_hash``: a change to model or
training code invalidates; the presentation-only modules of PRESENTATION_ONLY, the chapters and
the analysis code do not). An entry holds tensors.pt (loaded with weights_only=True),
meta.json (config, package version, code hash, torch version, hardware, wall time, metrics) and
manifest.json (sha256 of both), written last, each atomically (temp file + rename). An entry whose
manifest is missing or does not match is recomputed with a warning that names it; a run that
was interrupted resumes from the entry's checkpoint.pt.

Recorded runs: a run too long for ``make book`` (the paper profile) is shipped with the package
as its results entry, unchanged, in ``gated_attention/recorded/<name>/`` with a
``provenance.json`` (the commit of the code that wrote it, the command, anything unusual about
the run); ``recorded(name)`` loads it, its config rebuilt from its meta.json. Its code hash is
that of the code that produced it, not necessarily today's, and it is never recomputed: a
damaged recorded entry is an error. ``save_recorded`` adds one from a cache entry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import shutil
import time
import typing
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .gated_rnn import GatedRNN
from .tasks import TeacherStudentTask, masked_mse
from .training import (
    TrainConfig,
    gated_rnn_fast,
    plan_ensembles,
    resolve_device,
    train_by_size,
    unstack_students,
)

__all__ = [
    "PROFILES",
    "check_profile",
    "TeacherStudentConfig",
    "teacher_student_config",
    "RunResult",
    "run",
    "derive_seed",
    "cache_root",
    "code_hash",
    "config_hash",
    "entry_path",
    "config_from_dict",
    "RECORDED_ROOT",
    "recorded",
    "recorded_names",
    "save_recorded",
]

PROFILES = ("smoke", "quick", "paper")

#: Modules whose source does not change any result (the hash of ``code_hash`` skips them).
PRESENTATION_ONLY = (
    "book.py",
    "bench.py",
    "record.py",
    "scorecard.py",
    "sphinxext.py",
    "plotting.py",
    "analysis/",
)


def check_profile(profile: str) -> str:
    """Return ``profile`` if it is one of PROFILES, else raise a ValueError that lists them."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    return profile


def derive_seed(seed: int, stream: str) -> int:
    """An independent seed for one random stream ("teacher", "student", "data", "eval") of a run."""
    digest = hashlib.sha256(f"{int(seed)}/{stream}".encode()).digest()
    return int.from_bytes(digest[:7], "little")


@dataclass(frozen=True)
class TeacherStudentConfig:
    """The teacher-student experiment of Sec. 4.1 (and the size sweeps of Sec. 4.2, Fig. 3A/B).

    Every member of ``members()`` is one independent run: its seed gives its teacher
    (``random_attention(d, rank=teacher_rank, std=teacher_std)``), its student's initialisation
    and its data stream (``derive_seed(seed, stream)``), so members with one seed and different
    sizes share teacher and data (a paired sweep). Members train as one ensemble, or as a few
    ensembles of similar sizes one after another (``training.train_by_size``).

    Choices the paper does not give (ours): teacher weights N(0, 1/d); student weights
    N(0, 1/fan_in) times ``init_scale``, lam ~ U(lam_range) at initialisation; the optimiser
    settings in ``train`` (TrainConfig); the held-out evaluation batch of ``eval_batch``
    sequences.
    """

    name: str = "teacher-student"
    d: int = 4
    T: int = 32
    teacher_rank: int | None = None
    teacher_std: float | None = None
    n: int = 100
    m: int = 100
    sizes: tuple[int, ...] = ()  # n = m of each member; empty: every member has (n, m)
    seeds: tuple[int, ...] = (0,)
    side: bool = False
    lam_range: tuple[float, float] = (0.0, 1.0)
    init_scale: float = 1.0
    eval_batch: int = 1024
    train: TrainConfig = field(default_factory=lambda: TrainConfig(steps=1_000_000))

    def __post_init__(self) -> None:
        if not self.seeds:
            raise ValueError("seeds must name at least one seed")
        for k in (self.d, self.T, self.n, self.m, *self.sizes):
            if not isinstance(k, int) or k < 1:
                raise ValueError(f"d, T, n, m and sizes must be positive integers, got {k!r}")
        if not isinstance(self.train, TrainConfig):
            raise TypeError(f"train must be a TrainConfig, got {type(self.train).__name__}")

    def members(self) -> list[tuple[int, int, int]]:
        """(seed, n, m) of every ensemble member: sizes outer, seeds inner."""
        sizes = [(s, s) for s in self.sizes] if self.sizes else [(self.n, self.m)]
        return [(seed, n, m) for n, m in sizes for seed in self.seeds]

    def ensembles(self) -> list[list[int]]:
        """The member indices of each ensemble ``compute`` trains (``training.plan_ensembles``:
        one for a single size; a size sweep splits where padding would cost more)."""
        sizes = [(n, m) for _, n, m in self.members()]
        return plan_ensembles(sizes, self.d, self.d, self.T, self.train.batch_size, self.side)

    def task(self, seed: int) -> TeacherStudentTask:
        """The task (teacher and data distribution) of the members with this seed."""
        return TeacherStudentTask.from_seed(
            self.d,
            seed=derive_seed(seed, "teacher"),
            T=self.T,
            rank=self.teacher_rank,
            std=self.teacher_std,
        )

    def student(self, seed: int, n: int, m: int) -> GatedRNN:
        """The initial student of one member."""
        seed = derive_seed(seed, "student")
        rnn = GatedRNN(self.d, n, m, side=self.side, seed=seed, lam_range=self.lam_range)
        with torch.no_grad():
            for name, p in rnn.named_parameters():
                if name != "nu":
                    p.mul_(self.init_scale)
        return rnn

    def compute(self, *, checkpoint: Path | None = None, progress: bool = True):
        """Train every member; returns (tensors, metrics) for the results cache."""
        members = self.members()
        tasks = {seed: self.task(seed) for seed in self.seeds}
        res = train_by_size(  # one ensemble, or a few of similar sizes (a size sweep)
            [tasks[seed] for seed, _, _ in members],
            [self.student(*mb) for mb in members],
            self.train,
            data_seeds=[derive_seed(seed, "data") for seed, _, _ in members],
            checkpoint=checkpoint,
            progress=progress,
            desc=self.name,
        )
        eval_loss = _eval_loss(self, tasks, members, res.params)
        tensors = {
            "params": {k: v.to(torch.float64) for k, v in res.params.items()},
            "sizes": torch.tensor([[n, m] for _, n, m in members]),
            "seeds": torch.tensor([seed for seed, _, _ in members]),
            "loss_steps": res.loss_steps,
            "losses": res.losses.to(torch.float64),
            "eval_loss": eval_loss,
        }
        metrics = {
            "final_train_loss": res.final_loss.tolist(),
            "eval_loss": eval_loss.tolist(),
            "train_wall_time_s": res.wall_time,
            "resumed_from_step": res.resumed_from,
        }
        return tensors, metrics


def _eval_loss(config, tasks, members, params) -> torch.Tensor:
    """MSE of each member on ``eval_batch`` fresh held-out sequences (float64)."""
    xs, ys = [], []
    for seed, _, _ in members:
        g = torch.Generator().manual_seed(derive_seed(seed, "eval"))
        x, y = tasks[seed].sample(config.eval_batch, g)
        xs.append(x)
        ys.append(y)
    p = {k: v.detach().to(torch.float64) for k, v in params.items()}
    with torch.no_grad():
        y_hat = gated_rnn_fast(torch.stack(xs), p)
    return masked_mse(y_hat, torch.stack(ys))


def teacher_student_config(profile: str, **overrides: Any) -> TeacherStudentConfig:
    """The Sec. 4.1 config of a profile; ``overrides`` replace top-level fields.

    paper  d 4, n = m = 100, T 32, batch 64, 1,000,000 steps (the paper's sizes), checkpoints
           every 10,000 steps.
    quick  the same network and task, 20,000 steps (minutes on a 2-core CPU).
    smoke  the same network and task, 30 steps: only proves the code path.
    """
    check_profile(profile)
    steps, log_every, ckpt = {"smoke": (30, 10, 0), "quick": (20_000, 100, 2_000)}.get(
        profile, (1_000_000, 1_000, 10_000)
    )
    tc = TrainConfig(steps=steps, log_every=log_every, checkpoint_every=ckpt)
    if profile == "smoke":
        tc = dataclasses.replace(tc, chunk_steps=10)
    return dataclasses.replace(TeacherStudentConfig(train=tc), **overrides)


@dataclass
class RunResult:
    """A results-cache entry: ``tensors``, ``metrics`` (from ``compute``) and ``meta``."""

    config: Any
    tensors: dict
    metrics: dict
    meta: dict
    path: Path
    cached: bool
    provenance: dict = field(default_factory=dict)  # recorded runs: provenance.json

    @property
    def params(self) -> dict[str, torch.Tensor]:
        """The trained parameters, (E, ...) float64."""
        return self.tensors["params"]

    def students(self) -> list[GatedRNN]:
        """Member e as a float64 GatedRNN of its own size (n_e, m_e)."""
        sizes = [tuple(s) for s in self.tensors["sizes"].tolist()]
        return unstack_students(self.params, sizes)


def cache_root() -> Path:
    """``$GATED_ATTENTION_CACHE`` if set, else ``results/`` at the repository root."""
    env = os.environ.get("GATED_ATTENTION_CACHE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "results"


def code_hash(root: str | os.PathLike | None = None) -> str:
    """sha256 over the source of the package's computing modules (see PRESENTATION_ONLY).

    ``root`` is the package folder (default: this package).
    """
    root = Path(__file__).resolve().parent if root is None else Path(root)
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        if rel in PRESENTATION_ONLY or any(rel.startswith(p) for p in PRESENTATION_ONLY):
            continue
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _config_dict(config: Any) -> dict:
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"config must be a dataclass instance, got {type(config).__name__}")
    return {"type": type(config).__qualname__, "fields": dataclasses.asdict(config)}


def config_hash(config: Any, code: str | None = None) -> str:
    """12 hex digits of sha256(config as JSON + ``code``, by default ``code_hash()``)."""
    code = code_hash() if code is None else code
    text = json.dumps(_config_dict(config), sort_keys=True, default=str) + code
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def entry_path(config: Any, code: str | None = None) -> Path:
    """The cache entry of a config: ``<cache>/<name>-<config_hash(config, code)>``."""
    name = getattr(config, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{type(config).__name__} needs a non-empty str field 'name'")
    return cache_root() / f"{name}-{config_hash(config, code)}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _atomic_write(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    write(tmp)
    os.replace(tmp, path)


def _read_entry(path: Path) -> tuple[dict, dict]:
    """(meta, tensors) of the entry at ``path``, its files checked against its manifest; raises
    ValueError naming the problem if a file is missing, unreadable or altered."""
    try:
        sums = json.loads((path / "manifest.json").read_text())
        for fname, digest in sums.items():
            if _sha256(path / fname) != digest:
                raise ValueError(f"checksum of {fname} does not match the manifest")
        meta = json.loads((path / "meta.json").read_text())
        tensors = torch.load(path / "tensors.pt", weights_only=True)
        meta["metrics"]  # noqa: B018 (a meta.json without metrics is damaged)
    except (OSError, ValueError, RuntimeError, KeyError) as err:
        raise ValueError(str(err)) from err
    return meta, tensors


def _load_entry(path: Path, config: Any) -> RunResult | None:
    """The entry if complete and intact; None if absent; warns and returns None if damaged."""
    manifest = path / "manifest.json"
    if not manifest.exists():
        if (path / "tensors.pt").exists() or (path / "meta.json").exists():
            msg = f"results entry {path} is partial (no manifest); recomputing"
            warnings.warn(msg, stacklevel=3)
        return None
    try:
        meta, tensors = _read_entry(path)
    except ValueError as err:
        warnings.warn(f"results entry {path} is corrupt ({err}); recomputing", stacklevel=3)
        return None
    return RunResult(config, tensors, meta["metrics"], meta, path, cached=True)


def _config_types() -> dict[str, type]:
    """The config classes a results entry can name (imported here: no import cycle)."""
    from .regression import RegressionConfig

    return {cls.__qualname__: cls for cls in (TeacherStudentConfig, RegressionConfig)}


def _as_tuple(value: Any) -> Any:
    """JSON lists back to the tuples of a frozen config (nested lists too)."""
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list) else value


def _rebuild(cls: type, fields: dict) -> Any:
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise ValueError(f"{cls.__qualname__} has no field(s) {', '.join(unknown)}")
    kwargs = {}
    for name, value in fields.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            value = _rebuild(hint, value)
        elif typing.get_origin(hint) is tuple:
            value = _as_tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


def config_from_dict(d: dict) -> Any:
    """The config a results entry's meta.json describes (``meta["config"]``): the inverse of
    what ``run`` stores. Fields missing from ``d`` take today's defaults; a field that the
    config class no longer has is an error."""
    types = _config_types()
    cls = types.get(d.get("type")) if isinstance(d, dict) else None
    if cls is None:
        got = d.get("type") if isinstance(d, dict) else d
        raise ValueError(f"unknown config type {got!r}; expected one of {', '.join(types)}")
    return _rebuild(cls, d["fields"])


#: where the recorded runs live (package data)
RECORDED_ROOT = Path(__file__).resolve().parent / "recorded"


def recorded_names() -> list[str]:
    """The names of the recorded runs shipped with the package."""
    if not RECORDED_ROOT.is_dir():
        return []
    return sorted(p.name for p in RECORDED_ROOT.iterdir() if (p / "manifest.json").exists())


def recorded(name: str) -> RunResult:
    """The recorded run ``name`` (see the module docstring), its config rebuilt from its
    meta.json and its ``provenance.json`` in ``provenance``."""
    path = RECORDED_ROOT / str(name)
    if not isinstance(name, str) or not (path / "manifest.json").exists():
        known = ", ".join(recorded_names()) or "none"
        raise ValueError(f"no recorded run {name!r} in {RECORDED_ROOT}; recorded runs: {known}")
    try:
        meta, tensors = _read_entry(path)
    except ValueError as err:
        raise ValueError(
            f"recorded run {path} is damaged ({err}); it cannot be recomputed here: "
            "restore it from version control"
        ) from None
    prov_file = path / "provenance.json"
    provenance = json.loads(prov_file.read_text()) if prov_file.exists() else {}
    config = config_from_dict(meta["config"])
    return RunResult(config, tensors, meta["metrics"], meta, path, True, provenance)


def save_recorded(result: RunResult, name: str, **provenance: Any) -> Path:
    """Copy the results entry of ``result`` (from ``run``) to ``RECORDED_ROOT/<name>`` with
    ``provenance`` (e.g. commit=..., command=...) as its provenance.json; returns the folder.
    An existing recorded run of that name is an error (remove it by hand to replace it)."""
    dest = RECORDED_ROOT / name
    if dest.exists():
        raise FileExistsError(f"recorded run {dest} exists; remove it first to replace it")
    _read_entry(result.path)  # intact, or ValueError naming the problem
    dest.mkdir(parents=True)
    for fname in ("tensors.pt", "meta.json", "manifest.json"):
        shutil.copy2(result.path / fname, dest / fname)
    (dest / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    return dest


def hardware(device: str | torch.device | None = None) -> dict:
    """Where results were computed: the CPU (model, cores, torch threads), the platform, and the
    training device (``training.resolve_device``), with its name when it is a GPU."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    dev = resolve_device(device)
    out = {
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu": model,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "device": str(dev),
    }
    if dev.type == "cuda":
        out["device_name"] = torch.cuda.get_device_name(dev)
    return out


def run(config: Any, *, progress: bool = True, recompute: bool = False) -> RunResult:
    """Return the cached results of ``config``, computing and storing them if needed.

    ``recompute=True`` ignores a stored entry (and its checkpoint) and computes afresh.
    """
    from . import __version__

    code = code_hash()  # of the code that trains: the source may change during a long run
    path = entry_path(config, code)
    if recompute and path.exists():
        shutil.rmtree(path)
    found = _load_entry(path, config)
    if found is not None:
        return found
    path.mkdir(parents=True, exist_ok=True)
    for stale in ("manifest.json", "meta.json", "tensors.pt"):
        (path / stale).unlink(missing_ok=True)
    checkpoint = path / "checkpoint.pt"  # train() discards it, with a warning, if unreadable
    t0 = time.perf_counter()
    tensors, metrics = config.compute(checkpoint=checkpoint, progress=progress)
    meta = {
        "name": config.name,
        "config": _config_dict(config),
        "package_version": __version__,
        "code_hash": code,
        "torch_version": torch.__version__,
        "hardware": hardware(),
        "wall_time_s": time.perf_counter() - t0,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "metrics": metrics,
    }
    _atomic_write(path / "tensors.pt", lambda p: torch.save(tensors, p))
    meta_text = json.dumps(meta, indent=1, default=str)
    _atomic_write(path / "meta.json", lambda p: p.write_text(meta_text))
    sums = {f: _sha256(path / f) for f in ("tensors.pt", "meta.json")}
    _atomic_write(path / "manifest.json", lambda p: p.write_text(json.dumps(sums, indent=1)))
    checkpoint.unlink(missing_ok=True)
    return RunResult(config, tensors, metrics, meta, path, cached=False)
