"""``python -m gated_attention.sweep``: an experiment's jobs on a Dask cluster make the entry a
local ``cache.run`` makes, number for number; a worker killed mid-job loses nothing; a worker
with other code is refused. The cluster tests run 2 worker processes on loopback."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from distributed import Client, LocalCluster
from distributed.scheduler import KilledWorker

from gated_attention.experiments import cache
from gated_attention.experiments.registry import EXPERIMENTS, experiment_config
from gated_attention.sweep import (
    CodeHashMismatchError,
    SchedulerUnreachableError,
    SweepError,
    connect,
    plan,
    run_job,
    sweep,
)
from gated_attention.sweep.__main__ import main
from gated_attention.sweep.dispatch import _failure, _submit, _warn_without_gpu
from gated_attention.sweep.worker import completions

#: stored values that are wall times: they differ between any two runs
TIMING = {
    "step_time",
    "sweep_step_time",
    "train_wall_time_s",
    "wall_time_s",
    "wall_time_s_per_member",
}
#: the scheduler's HTTP endpoints on a free port, not 8787 (two clusters at once here)
QUIET = {"dashboard_address": "127.0.0.1:0"}
PACKAGE = Path(cache.__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client():
    """A cluster of 2 worker processes, one thread each, on loopback (shared by the tests)."""
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs=QUIET,
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def in_cache(monkeypatch, path: Path) -> Path:
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(path))
    return path


def assert_same(a, b, where: str = "tensors") -> None:
    """Equal nested dicts of tensors: same keys, dtypes and every number, NaN where NaN
    (timings aside)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            if k not in TIMING:
                assert_same(a[k], b[k], f"{where}/{k}")
        return
    assert a.dtype == b.dtype, where
    torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=where)


def assert_same_entry(swept, local, skip_metrics=()) -> None:
    """The entry of a sweep is the entry of a local run (apart from timings and provenance)."""
    hashes = swept.meta["code_hash"], local.meta["code_hash"]
    assert hashes[0] == hashes[1], f"the package's source changed while the test ran: {hashes}"
    assert swept.path.name == local.path.name  # the same config and code hash
    assert sorted(os.listdir(swept.path)) == ["manifest.json", "meta.json", "tensors.pt"]
    assert_same(swept.tensors, local.tensors)
    skip = TIMING | set(skip_metrics)
    assert {k: v for k, v in swept.metrics.items() if k not in skip} == {
        k: v for k, v in local.metrics.items() if k not in skip
    }
    (meta, _), (local_meta, _) = cache.read_entry(swept.path), cache.read_entry(local.path)
    for k in ("name", "config", "code_hash", "package_version", "torch_version"):
        assert meta[k] == local_meta[k], k
    assert set(meta) == set(local_meta) | {"sweep"}


def run_local(monkeypatch, tmp_path: Path, config) -> cache.RunResult:
    in_cache(monkeypatch, tmp_path / "local")
    return cache.run(config, progress=False)


def smoke(name: str, **train):
    config = experiment_config(name, "smoke")
    if train:
        config = dataclasses.replace(config, train=dataclasses.replace(config.train, **train))
    return config


# ---- planning and errors (no cluster) ---------------------------------------------------------


@pytest.mark.parametrize("name", ["how-many-neurons-A", "how-many-neurons-B"])
@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_ensemble_jobs_are_the_engines_ensembles(name, profile):
    config = experiment_config(name, profile)
    jobs = plan(config).jobs
    assert [list(j.members) for j in jobs] == config.ensembles()
    assert [j.name for j in jobs] == [f"ensemble-{k}" for k in range(len(jobs))]
    gpu_jobs = plan(config, device="cuda").jobs  # the split for a GPU's cost model
    assert [list(j.members) for j in gpu_jobs] == config.ensembles("cuda")


def test_jobs_of_the_other_experiments():
    arch = experiment_config("architectures-teacher-lr", "quick")
    assert [j.plan.part for j in plan(arch).jobs] == list(range(len(arch.groups())))
    recall = experiment_config("associative-recall", "paper")
    assert [j.plan.part for j in plan(recall).jobs] == list(recall.gatings)
    setup = experiment_config("fig4b-setup", "quick")
    assert [j.plan.part for j in plan(setup).jobs] == list(setup.families)
    (one,) = plan(experiment_config("teacher-identification", "paper")).jobs
    assert one.checkpoint.name == "ensemble-0.pt"  # the file a local run checkpoints to
    assert plan(one.config).jobs == [one]  # the same plan, again: jobs are data
    regression = experiment_config("in-context-regression", "quick")
    members = sorted(e for j in plan(regression).jobs for e in j.members)
    assert members == list(range(len(regression.members())))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["no-such-experiment", "--profile", "smoke"], "unknown experiment 'no-such-experiment'"),
        (["teacher-identification", "--profile", "huge"], "unknown profile 'huge'"),
    ],
)
def test_unknown_experiment_or_profile(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_unreachable_scheduler(capsys):
    with pytest.raises(SchedulerUnreachableError, match="no Dask scheduler answered"):
        with connect("tcp://127.0.0.1:1", timeout=1):
            pass
    argv = ["teacher-identification", "--profile", "smoke", "--scheduler", "tcp://127.0.0.1:1"]
    assert main([*argv, "--timeout", "1"]) == 1
    assert "tcp://127.0.0.1:1 within 1 s" in capsys.readouterr().err


def test_a_worker_with_other_code_refuses_the_job(monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path)
    job = plan(smoke("teacher-identification")).jobs[0]
    Path(job.entry).mkdir(parents=True)
    with pytest.raises(CodeHashMismatchError) as err:
        run_job(dataclasses.replace(job, code_hash="c0ffee"))
    assert err.value.client_hash == "c0ffee" and len(err.value.worker_hash) == 64
    assert "c0ffee" in str(err.value) and err.value.worker_hash in str(err.value)
    assert not job.output.exists() and not job.checkpoint_files()


def test_a_job_that_kept_killing_workers_is_named(monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path)
    p = plan(smoke("how-many-neurons-B"))
    job = p.jobs[1]

    class Dead:  # a future whose workers all died
        status = "error"

        def exception(self):
            return KilledWorker(job.key, SimpleNamespace(address="tcp://127.0.0.1:9"), 3)

    message = _failure(p, job, Dead(), retries=2)
    assert "how-many-neurons-B ensemble 1" in message and job.key in message
    assert "4 workers that ran it all died" in message and "tcp://127.0.0.1:9" in message
    assert "Run the sweep again" in message


def test_a_finished_job_is_not_trained_twice(monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path)
    job = plan(smoke("teacher-identification")).jobs[0]
    Path(job.entry).mkdir(parents=True)
    first = run_job(job)
    again = run_job(job)  # a retry whose first attempt finished: loads, does not train
    assert first["trained"] and not again["trained"]
    assert again["pid"] == first["pid"] and completions(job) == 1


# ---- on a cluster -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_sweep_equals_a_local_run(name, client, monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path / "sweep")  # first: a config may read another's entry
    config = smoke(name)
    lines: list[str] = []
    (swept,) = sweep([config], client, echo=lines.append)
    jobs = plan(config).jobs
    assert sum(line.startswith("[") for line in lines) == len(jobs)
    assert not swept.cached
    record = swept.meta["sweep"]
    assert [r["job"] for r in record["jobs"]] == [j.name for j in jobs]
    assert {r["completions"] for r in record["jobs"]} == {1}
    assert {w["code_hash"] for w in record["workers"]} == {swept.meta["code_hash"]}
    assert {r["device"] for r in record["jobs"]} == {"cpu"}
    loaded = cache.run(config, progress=False)  # what the book reads: the sweep's entry
    assert loaded.cached and loaded.path == swept.path
    local = run_local(monkeypatch, tmp_path, config)
    assert_same_entry(loaded, local)


@pytest.mark.slow
def test_a_job_finished_earlier_is_loaded_not_trained(client, monkeypatch, tmp_path):
    config = smoke("how-many-neurons-B")
    in_cache(monkeypatch, tmp_path / "sweep")
    early = plan(config).jobs[1]
    Path(early.entry).mkdir(parents=True)
    run_job(early)  # as if an earlier sweep had finished this job, then stopped
    lines: list[str] = []
    (swept,) = sweep([config], client, echo=lines.append)
    assert any("ensemble 1" in line and "not trained again" in line for line in lines)
    rows = {r["job"]: r for r in swept.meta["sweep"]["jobs"]}
    assert (
        not rows["ensemble-1"]["trained_in_this_sweep"]
        and rows["ensemble-0"]["trained_in_this_sweep"]
    )
    assert {r["completions"] for r in rows.values()} == {1}
    (again,) = sweep([config], client, echo=lines.append)  # a complete entry: nothing to do
    assert again.cached and again.path == swept.path and "complete already" in lines[-1]
    assert_same_entry(swept, run_local(monkeypatch, tmp_path, config))


@pytest.mark.slow
def test_a_killed_worker_loses_nothing(client, monkeypatch, tmp_path):
    """SIGKILL the worker of a job once it has written a checkpoint: the job resumes elsewhere
    from that checkpoint, no job trains twice, and the entry is the local run's."""
    client.wait_for_workers(2)
    config = smoke("how-many-neurons-B", steps=400, checkpoint_every=10)
    in_cache(monkeypatch, tmp_path / "sweep")
    p = plan(config)
    victim = p.jobs[0]
    checkpoint = victim.checkpoint
    done: dict = {}

    def run() -> None:
        try:
            done["result"] = sweep([config], client, echo=lambda line: None)
        except BaseException as err:  # noqa: BLE001 - re-raised by the test below
            done["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while not checkpoint.exists():
        assert time.monotonic() < deadline and thread.is_alive(), "no checkpoint written"
        time.sleep(0.02)
    (address,) = [w for w, keys in client.processing().items() if victim.key in keys]
    pid = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGKILL)
    thread.join(timeout=300)
    assert not thread.is_alive()
    if "error" in done:
        raise done["error"]
    (swept,) = done["result"]
    rows = {r["job"]: r for r in swept.meta["sweep"]["jobs"]}
    assert rows[victim.name]["checkpoints_found"] == [checkpoint.name]
    assert rows[victim.name]["resumed_from_step"] >= 10
    assert rows[victim.name]["pid"] != pid
    assert {r["completions"] for r in rows.values()} == {1}
    assert not checkpoint.exists()
    local = run_local(monkeypatch, tmp_path, config)
    assert_same_entry(swept, local, skip_metrics={"resumed_from_step"})


@pytest.mark.slow
def test_gpu_jobs_need_the_resource_and_a_gpu(monkeypatch, tmp_path):
    """--gpu: a local cluster declares GPU per worker, jobs ask for it and train on "cuda"; on
    a machine without one the job fails, by name, after its retries."""
    if torch.cuda.is_available():
        pytest.skip("this checks the failure without a GPU")
    in_cache(monkeypatch, tmp_path)
    config = smoke("teacher-identification")
    lines: list[str] = []
    with connect(workers=1, gpu=True) as c:
        workers = c.scheduler_info()["workers"].values()
        assert [w["resources"] for w in workers] == [{"GPU": 1}]
        with pytest.raises(SweepError) as err:
            sweep([config], c, device="cuda", retries=1, echo=lines.append)
    assert "teacher-identification ensemble 0" in str(err.value)
    assert "torch sees no CUDA device" in str(err.value) and "tried 2 times" in str(err.value)
    assert not plan(config).jobs[0].output.exists()


@pytest.mark.slow
def test_gpu_jobs_wait_for_a_gpu_worker(client, monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path)
    p = plan(smoke("how-many-neurons-B"), device="cuda")
    lines: list[str] = []
    futures = _submit(client, p, 0, lines.append)
    try:
        _warn_without_gpu(client, lines.append)
        scheduler = client.cluster.scheduler
        deadline = time.monotonic() + 10
        while not all(f.key in scheduler.tasks for f in futures) and time.monotonic() < deadline:
            time.sleep(0.05)
        (task,) = [scheduler.tasks[f.key] for f in futures]  # one ensemble on a GPU
        assert task.resource_restrictions == {"GPU": 1}
        assert task.state == "no-worker"  # no worker here declares a GPU
        assert "no worker declares the resource GPU" in lines[-1]
    finally:
        client.cancel(futures)


def _package_with_other_code(dest: Path) -> Path:
    """A copy of the package with one computing module changed (a comment)."""
    copy = dest / "gated_attention"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "recorded"))
    with open(copy / "engine" / "loop.py", "a") as f:
        f.write("\n# the same engine, edited on one worker\n")
    return copy


@pytest.mark.slow
def test_a_cluster_worker_with_other_code_stops_the_sweep(monkeypatch, tmp_path):
    other = _package_with_other_code(tmp_path / "other")
    config = smoke("how-many-neurons-B")
    assert cache.code_hash(other, config=config) != cache.code_hash(config=config)
    in_cache(monkeypatch, tmp_path / "sweep")
    env = {**os.environ, "PYTHONPATH": str(other.parent), "OMP_NUM_THREADS": "1"}
    with (
        LocalCluster(
            n_workers=0, host="127.0.0.1", dashboard_address=None, scheduler_kwargs=QUIET
        ) as cluster,
        Client(cluster) as c,
    ):
        worker = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", cluster.scheduler_address]
            + ["--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            c.wait_for_workers(1, timeout=120)
            before = cache.code_hash(config=config)  # the client's (others may edit it meanwhile)
            with pytest.raises(CodeHashMismatchError) as err:
                sweep([config], c, echo=lambda line: None)
            clients = {before, cache.code_hash(config=config)}
            deadline = time.monotonic() + 10
            while cluster.scheduler.tasks and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not cluster.scheduler.tasks  # the other job was cancelled
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    assert err.value.worker_hash == cache.code_hash(other, config=config)
    assert err.value.client_hash in clients
    assert err.value.worker_hash in str(err.value) and err.value.client_hash in str(err.value)
    assert isinstance(err.value, SweepError)
    assert not any(j.output.exists() for j in plan(config).jobs)


@pytest.mark.slow
def test_command_line_on_a_local_cluster(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    argv = ["teacher-identification", "--profile", "smoke", "--workers", "2"]
    out = subprocess.run(
        [sys.executable, "-m", "gated_attention.sweep", *argv, "--cache", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "[1/1] teacher-identification ensemble 0" in out.stdout
    assert "entry: " in out.stdout and "(computed)" in out.stdout
    (entry,) = tmp_path.iterdir()
    meta, _ = cache.read_entry(entry)
    assert meta["sweep"]["jobs"][0]["worker"].startswith("tcp://127.0.0.1:")


def test_a_worker_keeps_freed_memory_for_reuse():
    """Dask's nanny fixes glibc's mmap threshold at 128 kB (MALLOC_TRIM_THRESHOLD_): the job
    raises it again, so activations come from the heap (on glibc, where mallopt exists)."""
    import ctypes

    from gated_attention.sweep.worker import keep_freed_memory

    try:
        ctypes.CDLL("libc.so.6").mallopt  # noqa: B018
    except (OSError, AttributeError):
        pytest.skip("not glibc: mallopt is absent and the call is a no-op")
    assert keep_freed_memory() is True
