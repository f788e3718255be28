"""``gated_attention.sweep``: the runner's Dask executor. An experiment's jobs on a Dask cluster
make the entry an in-process run makes, number for number; a worker killed mid-job loses
nothing; a worker with other code is refused; a failing job is named. The cluster tests run
2 worker processes on loopback (the first: 1 worker of 2 threads in this process)."""

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

from gated_attention import sweep as sw
from gated_attention.experiments import cache, runner
from gated_attention.experiments.registry import EXPERIMENTS, experiment_config
from gated_attention.sweep.__main__ import main

#: stored values that are wall times: they differ between any two runs
TIMING = {"step_time", "sweep_step_time", "train_wall_time_s", "wall_time_s"}
TIMING |= {"wall_time_s_per_member"}
#: the scheduler's HTTP endpoints on a free port, not 8787 (two clusters at once here)
QUIET = {"dashboard_address": "127.0.0.1:0"}
PACKAGE = Path(cache.__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client():
    """A cluster of 2 worker processes, one thread each, on loopback (shared by the tests)."""
    with sw.connect(workers=2) as c:  # what the command line starts
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


def tasks_of(config, device: str = "cpu") -> list[runner.Task]:
    """The tasks a run of ``config`` in the current cache trains (its entry's folder made)."""
    entry = cache.entry_path(config).resolve()
    entry.mkdir(parents=True, exist_ok=True)
    return [t for _, t in runner.plan(config, device, entry / "checkpoint.pt").todo]


# ---- the executors agree -----------------------------------------------------------------


def test_in_process_and_on_a_cluster_the_entries_are_identical(monkeypatch, tmp_path):
    """The same smoke experiment (two jobs) through ``runner.run_all`` in this process and on a
    Dask cluster (one worker of two threads, in this process): the same entry."""
    config = smoke("how-many-neurons-B")
    assert len(config.jobs("cpu")) == 2
    in_cache(monkeypatch, tmp_path / "in-process")
    (alone,) = runner.run_all([config], runner.InProcess("cpu"), progress=False)
    assert alone is not None and not alone.cached
    in_cache(monkeypatch, tmp_path / "cluster")
    lines: list[str] = []
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
            scheduler_kwargs=QUIET,
        ) as cluster,
        Client(cluster) as c,
    ):  # fmt: skip
        (swept,) = runner.run_all([config], sw.Cluster(c, echo=lines.append), echo=lines.append)
    assert sum(line.startswith("[") for line in lines) == 2  # one line per job
    assert [r["job"] for r in swept.meta["sweep"]["jobs"]] == ["ensemble-0", "ensemble-1"]
    assert_same_entry(swept, alone)
    assert cache.run(config, progress=False).cached  # what the book reads: this entry


# ---- planning and errors (no cluster) ---------------------------------------------------------


@pytest.mark.parametrize("name", ["how-many-neurons-A", "how-many-neurons-B"])
@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_ensemble_jobs_are_the_engines_ensembles(name, profile):
    config = experiment_config(name, profile)
    jobs = runner.plan(config, "cpu").jobs
    assert [list(j.members) for j in jobs] == config.ensembles()
    assert [j.key for j in jobs] == [f"ensemble-{k}" for k in range(len(jobs))]
    gpu_jobs = runner.plan(config, "cuda").jobs  # the split for a GPU's cost model
    assert [list(j.members) for j in gpu_jobs] == config.ensembles("cuda")


def test_jobs_of_the_other_experiments(monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path)
    arch = experiment_config("architectures-teacher-lr", "quick")
    assert [t.job.part for t in tasks_of(arch)] == list(range(len(arch.groups())))
    recall = experiment_config("associative-recall", "paper")
    assert [t.job.part for t in tasks_of(recall)] == list(recall.gatings)
    setup = experiment_config("fig4b-setup", "quick")
    assert [t.job.part for t in tasks_of(setup)] == list(setup.families)
    (one,) = tasks_of(experiment_config("teacher-identification", "paper"))
    assert one.checkpoint.name == "ensemble-0.pt"  # the file a local run checkpoints to
    assert tasks_of(one.config) == [one]  # the same plan, again: jobs are data
    regression = experiment_config("in-context-regression", "quick")
    members = sorted(e for t in tasks_of(regression) for e in t.job.members)
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
    with pytest.raises(sw.SchedulerUnreachableError, match="no Dask scheduler answered"):
        with sw.connect("tcp://127.0.0.1:1", timeout=1):
            pass
    argv = ["teacher-identification", "--profile", "smoke", "--scheduler", "tcp://127.0.0.1:1"]
    assert main([*argv, "--timeout", "1"]) == 1
    assert "tcp://127.0.0.1:1 within 1 s" in capsys.readouterr().err


def test_a_worker_with_other_code_refuses_the_job(monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path)
    (task,) = tasks_of(smoke("teacher-identification"))
    with pytest.raises(sw.CodeHashMismatchError) as err:
        sw.on_worker(task, "c0ffee", "cpu")
    assert err.value.client_hash == "c0ffee" and len(err.value.worker_hash) == 64
    assert "c0ffee" in str(err.value) and err.value.worker_hash in str(err.value)
    assert not task.done.exists() and not sw.checkpoints(task)


def test_a_job_that_kept_killing_workers_is_named(monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path)
    task = tasks_of(smoke("how-many-neurons-B"))[1]
    dead = KilledWorker(sw.task_key(task), SimpleNamespace(address="tcp://127.0.0.1:9"), 3)
    message = sw.failure(task, dead, retries=2)
    assert "how-many-neurons-B ensemble 1" in message and sw.task_key(task) in message
    assert "4 workers that ran it all died" in message and "tcp://127.0.0.1:9" in message
    assert "Run the sweep again" in message


def test_a_finished_job_is_not_trained_twice(monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path)
    (task,) = tasks_of(smoke("teacher-identification"))
    out, where = sw.on_worker(task, cache.code_hash(config=task.config), "cpu")
    assert task.done.exists() and where["device"] == "cpu"
    trained = []
    monkeypatch.setattr(type(task.config), "train_job", lambda *a, **k: trained.append(a))
    again, _ = sw.on_worker(task, cache.code_hash(config=task.config), "cpu")  # a retry
    assert trained == [] and again.keys() == out.keys()
    assert_same(again["params"], out["params"])


# ---- on a cluster -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_sweep_equals_a_local_run(name, client, monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path / "sweep")  # first: a config may read another's entry
    config = smoke(name)
    lines: list[str] = []
    (swept,) = sw.sweep([config], client, echo=lines.append)
    jobs = config.jobs("cpu")
    assert sum(line.startswith("[") for line in lines) == len(jobs)
    assert not swept.cached
    record = swept.meta["sweep"]["jobs"]
    assert [r["job"] for r in record] == [j.key for j in jobs]
    assert {r["code_hash"] for r in record} == {swept.meta["code_hash"]}
    assert {r["device"] for r in record} == {"cpu"}
    loaded = cache.run(config, progress=False)  # what the book reads: the sweep's entry
    assert loaded.cached and loaded.path == swept.path
    local = run_local(monkeypatch, tmp_path, config)
    assert_same_entry(loaded, local)


@pytest.mark.slow
def test_a_job_finished_earlier_is_loaded_not_trained(client, monkeypatch, tmp_path):
    config = smoke("how-many-neurons-B")
    in_cache(monkeypatch, tmp_path / "sweep")
    runner.train(tasks_of(config)[1])  # as if an earlier sweep had finished this job, then stopped
    lines: list[str] = []
    (swept,) = sw.sweep([config], client, echo=lines.append)
    assert "1 job(s) finished earlier, not trained again" in lines[0]
    assert [r["job"] for r in swept.meta["sweep"]["jobs"]] == ["ensemble-0"]
    (again,) = sw.sweep([config], client, echo=lines.append)  # a complete entry: nothing to do
    assert again.cached and again.path == swept.path and "complete already" in lines[-1]
    assert_same_entry(swept, run_local(monkeypatch, tmp_path, config))


@pytest.mark.slow
def test_a_killed_worker_loses_nothing(client, monkeypatch, tmp_path):
    """SIGKILL the worker of a job once it has written a checkpoint: the job resumes elsewhere
    from that checkpoint, and the entry is the local run's."""
    client.wait_for_workers(2)
    config = smoke("how-many-neurons-B", steps=400, checkpoint_every=10)
    in_cache(monkeypatch, tmp_path / "sweep")
    victim = tasks_of(config)[0]
    done: dict = {}

    def run() -> None:
        try:
            done["result"] = sw.sweep([config], client, echo=lambda line: None)
        except BaseException as err:  # noqa: BLE001 - re-raised by the test below
            done["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while not victim.checkpoint.exists():
        assert time.monotonic() < deadline and thread.is_alive(), "no checkpoint written"
        time.sleep(0.02)
    key = sw.task_key(victim)
    (address,) = [w for w, keys in client.processing().items() if key in keys]
    pid = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGKILL)
    thread.join(timeout=300)
    assert not thread.is_alive()
    if "error" in done:
        raise done["error"]
    (swept,) = done["result"]
    rows = {r["job"]: r for r in swept.meta["sweep"]["jobs"]}
    assert rows[victim.job.key]["checkpoints_found"] == [victim.checkpoint.name]
    assert rows[victim.job.key]["resumed_from_step"] >= 10
    assert rows[victim.job.key]["pid"] != pid
    assert not victim.checkpoint.exists() and not victim.done.exists()
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
    with sw.connect(workers=1, gpu=True) as c:
        workers = c.scheduler_info()["workers"].values()
        assert [w["resources"] for w in workers] == [{"GPU": 1}]
        with pytest.raises(sw.SweepError) as err:
            sw.sweep([config], c, device="cuda", retries=1, echo=lines.append)
    assert "teacher-identification ensemble 0" in str(err.value)
    assert "torch sees no CUDA device" in str(err.value) and "tried 2 times" in str(err.value)
    assert not any(t.done.exists() for t in tasks_of(config, "cuda"))


@pytest.mark.slow
def test_gpu_jobs_wait_for_a_gpu_worker(client, monkeypatch, tmp_path):
    in_cache(monkeypatch, tmp_path)
    tasks = tasks_of(smoke("how-many-neurons-B"), "cuda")
    lines: list[str] = []
    futures = sw.Cluster(client, device="cuda", echo=lines.append).submit(tasks)
    try:
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
            with pytest.raises(sw.CodeHashMismatchError) as err:
                sw.sweep([config], c, echo=lambda line: None)
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
    assert isinstance(err.value, sw.SweepError)
    assert not any(t.done.exists() for t in tasks_of(config))


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
    if sys.platform != "linux":
        pytest.skip("not glibc: mallopt is absent and the call is a no-op")
    assert sw.keep_freed_memory() is True
