"""Sweeps: an experiment's training split into independent jobs on a Dask cluster, combined into
the very results entry a local ``cache.run(config)`` writes.

    python -m gated_attention.sweep EXPERIMENT --profile P [--scheduler tcp://HOST:PORT]
                                    [--workers N] [--gpu] [--cache DIR]

Why: the paper profile trains for hours per experiment; the independent jobs of an experiment's
plan (``experiments.protocol``: the ensembles of a size sweep, the groups of an architectures
sweep, the gatings of associative recall, ...) can run on different machines at once. The
entry they make is the local run's, number for number (same thread count and hardware), so
the book cannot tell.

Modules (one job each):
    jobs        ``Job`` and ``plan_jobs``: the experiment's own plan (``config.jobs``), bound to
                its entry, code hash and device
    worker      ``run_job``: code check, skip if finished, the experiment's ``train_job`` with
                checkpoints, save atomically
    provenance  the code-hash check (``CodeHashMismatchError``) and what a job records of its worker
    assemble    the jobs' outputs -> the experiment's ``assemble`` -> the entry, with a "sweep"
                provenance
    dispatch    ``sweep``: submit, one line per finished job, write entries, report failures
    cluster     ``connect``: a local cluster or a running scheduler

Shared storage: the results cache (``--cache`` or $GATED_ATTENTION_CACHE) must be one folder
that the client and every worker see at the same absolute path (a network or parallel file
system), where a rename within a folder is atomic and a file closed on one machine is then
readable on another. Each job writes its checkpoints and its output there, so a job whose
worker died resumes on any other worker from its last checkpoint (the cadence of the config's
``checkpoint_every``; the smoke profiles keep none and restart), and a finished job is never
trained again, even by a later sweep.

GPUs: ``--gpu`` submits every job with ``resources={"GPU": 1}`` and trains it on "cuda"; the
workers must declare that resource (``--resources GPU=1``; a local cluster with ``--gpu`` does).
On a GPU the engine trains a size sweep as one ensemble, so such an experiment is one job there.
"""

from .cluster import SchedulerUnreachableError, connect
from .dispatch import Plan, plan, sweep
from .jobs import Job, plan_jobs
from .provenance import CodeHashMismatchError, SweepError
from .worker import run_job

__all__ = [
    "CodeHashMismatchError",
    "Job",
    "Plan",
    "SchedulerUnreachableError",
    "SweepError",
    "connect",
    "plan",
    "plan_jobs",
    "run_job",
    "sweep",
]
