"""The experiment protocol (gated_attention/experiments/protocol.py) and the engine's loss and
optimiser choices (TrainConfig.loss, .optimiser, .schedule, train's on_log): every experiment
plans its jobs, trains one through the engine, assembles the entry; no experiment keeps a loop
of its own, and no module patches another's attributes."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from gated_attention.engine import TrainConfig, stack_students, train
from gated_attention.engine.config import cosine_lr
from gated_attention.experiments import cache, protocol, runner
from gated_attention.experiments.registry import EXPERIMENTS, NEEDS, experiment_config
from gated_attention.models.gated_rnn import GatedRNN, gated_rnn_forward
from gated_attention.tasks.associative_recall import AssociativeRecall
from gated_attention.tasks.teacher_student import TeacherStudentTask

PACKAGE = Path(protocol.__file__).resolve().parents[1]


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_registered_experiment_speaks_the_protocol(name, monkeypatch, tmp_path):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))  # a config may read an entry
    config = experiment_config(name, "smoke")
    assert isinstance(config, protocol.Experiment)
    jobs = config.jobs("cpu")
    keys = [job.key for job in jobs]
    assert jobs and len(set(keys)) == len(keys)
    assert all(isinstance(job, protocol.Job) for job in jobs)


@pytest.mark.parametrize("task", ["teacher", "regression"])
def test_the_main_fig4_runs_take_their_rates_from_the_sweep_entry(task, monkeypatch, tmp_path):
    from gated_attention.experiments import architectures as arch
    from gated_attention.experiments import cache

    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))
    name = f"architectures-{task}"
    assert NEEDS[name] == f"{name}-lr"
    sweep = experiment_config(NEEDS[name], "smoke")
    asked = []

    def resolve(config):
        asked.append(config)
        return cache.run(config, progress=False)

    config = experiment_config(name, "smoke", resolve=resolve)
    assert asked == [sweep]  # the sweep's entry is what the config reads
    swept = cache.run(sweep, progress=False)
    assert swept.cached  # computed once, by resolve
    assert config.lrs == arch.best_lrs(sweep, swept.tensors)
    assert config == arch.architectures_config("smoke", task, lrs=config.lrs)
    assert experiment_config(name, "smoke") == config  # the default: the cached entry


def test_a_config_without_the_protocol_cannot_be_made():
    @dataclasses.dataclass(frozen=True)
    class Half(protocol.Experiment):
        name: str = "half"

        def jobs(self, device="cpu"):
            return [protocol.Job("only", "the only job")]

    with pytest.raises(TypeError, match="abstract"):
        Half()
    with pytest.raises(ValueError, match="file name"):
        protocol.Job("a/b", "a key with a slash")


@dataclasses.dataclass(frozen=True)
class Counting(protocol.Experiment):
    """Two jobs that write what they trained to a log (a list shared by the test)."""

    name: str = "counting"
    log: list = dataclasses.field(default_factory=list, compare=False)

    def jobs(self, device="cpu"):
        return [protocol.Job(f"job-{k}", f"job {k}", part=k) for k in range(2)]

    def train_job(self, job, *, checkpoint=None, progress=True):
        self.log.append(job.key)
        return {"value": torch.tensor(float(job.part) + 1.0)}

    def assemble(self, jobs, outputs):
        return {"sum": sum(o["value"] for o in outputs)}, {"keys": [j.key for j in jobs]}


def test_compute_trains_only_the_unfinished_jobs_and_cleans_up(tmp_path):
    config = Counting()
    torch.save({"value": torch.tensor(10.0)}, tmp_path / "job-0-done.pt")  # finished earlier
    tensors, metrics = config.compute(checkpoint=tmp_path / "checkpoint.pt", progress=False)
    assert config.log == ["job-1"]  # job 0 was loaded, not trained
    assert float(tensors["sum"]) == 12.0 and metrics["keys"] == ["job-0", "job-1"]
    assert list(tmp_path.iterdir()) == []
    again, _ = Counting().compute(checkpoint=None, progress=False)
    assert float(again["sum"]) == 3.0


#: what the Ordered experiments trained, in order
TRAINED: list[str] = []


@dataclasses.dataclass(frozen=True)
class Ordered(protocol.Experiment):
    """Two jobs that say when they train."""

    name: str = "ordered"

    def jobs(self, device="cpu"):
        return [protocol.Job(f"job-{k}", f"job {k}", part=k) for k in range(2)]

    def train_job(self, job, *, checkpoint=None, progress=True):
        TRAINED.append(f"{self.name} {job.key}")
        return {"value": torch.tensor(float(job.part))}

    def assemble(self, jobs, outputs):
        return {"values": torch.stack([o["value"] for o in outputs])}, {"n": len(jobs)}


def test_a_campaign_trains_in_the_order_given_and_writes_each_entry_when_done(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))
    TRAINED.clear()
    lines: list[str] = []
    first, second = runner.run_all([Ordered("central"), Ordered("other")], echo=lines.append)
    assert TRAINED == ["central job-0", "central job-1", "other job-0", "other job-1"]
    assert lines[1].startswith("jobs 2/4 done") and lines[2].startswith("central: entry written")
    assert first.path.name.startswith("central-") and second.metrics == {"n": 2}
    assert first.tensors["values"].tolist() == [0.0, 1.0]
    again = runner.run_all([Ordered("other"), Ordered("central")], echo=lines.append)
    assert [r.path for r in again] == [second.path, first.path]
    assert all(r.cached for r in again) and len(TRAINED) == 4  # nothing trained again


def test_a_budget_leaves_the_rest_for_the_next_run(monkeypatch, tmp_path):
    """Past its budget no job starts: no entry, the finished jobs kept, and the next run
    trains only the rest (the campaign's policy)."""
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))
    TRAINED.clear()
    lines: list[str] = []
    assert runner.run_all([Ordered()], budget_s=-1, echo=lines.append) == [None]
    assert TRAINED == [] and "2 job(s) left for a later run" in lines[-1]
    path = cache.entry_path(Ordered()) / "checkpoint.pt"
    (_, first), _ = runner.plan(Ordered(), "cpu", path).todo
    runner.train(first)  # as if a run had finished this one job, then stopped
    (result,) = runner.run_all([Ordered()], echo=lines.append)
    assert "1 job(s) finished earlier, not trained again" in lines[-3]
    assert TRAINED == ["ordered job-0", "ordered job-1"] and not first.done.exists()
    assert sorted(p.name for p in result.path.iterdir()) == [
        "manifest.json", "meta.json", "tensors.pt",
    ]  # fmt: skip


def test_a_failing_job_names_itself(monkeypatch, tmp_path):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))

    def broken(self, job, **kw):
        raise RuntimeError("out of luck")

    monkeypatch.setattr(Ordered, "train_job", broken)
    with pytest.raises(RuntimeError, match="out of luck") as err:
        runner.run_all([Ordered("central")], progress=False)
    assert err.value.__notes__ == ["in job 'job-0' (job 0) of central"]


def test_no_module_patches_another_at_run_time():
    """No ``setattr`` on a module and no assignment to another module's attribute."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        modules = {
            a.asname or a.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for a in node.names
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setattr":
                target = node.args[0]
                if isinstance(target, ast.Name) and target.id in modules | {"module"}:
                    offenders.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") in modules:
                        offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []
    assert not (PACKAGE / "sweep" / "intercept.py").exists()


# ---- the engine's loss and optimiser choices, each against a plain loop ---------------------


def _recall_members():
    task = AssociativeRecall(3, 3)
    students = [GatedRNN(task.d, n, n, task.d_out, seed=s) for s, n in ((0, 4), (1, 6))]
    return task, students


def test_cross_entropy_equals_a_plain_loop():
    task, students = _recall_members()
    tc = TrainConfig(steps=12, lr=1e-2, log_every=4, chunk_steps=6, loss="cross_entropy")
    params, masks = stack_students(students)
    res = train([task, task], params, tc, data_seeds=[5, 6], masks=masks, progress=False)
    # the plain loop: the same data, AdamW and schedule, the cross-entropy at the query step
    P = {k: v.to(torch.float32).clone().requires_grad_(True) for k, v in params.items()}
    Mk = {k: v.to(torch.float32) for k, v in masks.items()}
    decay = [P[k] for k in P if k != "nu"]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": tc.weight_decay}, {"params": [P["nu"]]}],
        lr=tc.lr,
        weight_decay=0.0,
    )
    opt.param_groups[1]["weight_decay"] = 0.0
    gens = [torch.Generator().manual_seed(s) for s in (5, 6)]
    losses = []
    for step in range(tc.steps):
        if step % tc.chunk_steps == 0:
            draws = [task.sample_batch(tc.chunk_steps * tc.batch_size, g) for g in gens]
            shape = (tc.chunk_steps, tc.batch_size)
            X = torch.stack([b.x.view(*shape, *b.x.shape[1:]) for b in draws], 1).float()
            Y = torch.stack([b.answer.view(*shape) for b in draws], 1)
        x, y = X[step % tc.chunk_steps], Y[step % tc.chunk_steps]
        for group in opt.param_groups:
            group["lr"] = cosine_lr(step, tc)
        logits = gated_rnn_forward(x, {k: P[k] * Mk[k] for k in P})[:, :, -1]
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none")
        loss = loss.view(2, -1).mean(dim=1)
        opt.zero_grad()
        loss.sum().backward()
        opt.step()
        losses.append(loss.detach())
    for k in P:
        torch.testing.assert_close(res.params[k], (P[k] * Mk[k]).detach(), rtol=1e-4, atol=1e-6)
    window = torch.stack(losses)[-tc.log_every :].mean(0)
    torch.testing.assert_close(res.losses[-1], window, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("optimiser", ["adam_l2", "sgd_l2"])
def test_l2_optimisers_at_a_constant_rate_equal_torch_s(optimiser):
    task = TeacherStudentTask.from_seed(3, seed=1, T=6)
    rnn = GatedRNN(3, 5, 5, seed=2)
    params = {k: v.detach()[None] for k, v in rnn.params().items()}
    lr = 1e-2 if optimiser == "adam_l2" else 0.05
    tc = TrainConfig(
        steps=6,
        lr=lr,
        weight_decay=0.03,
        optimiser=optimiser,
        schedule="constant",
        log_every=2,
        chunk_steps=3,
        mode="reference",
    )
    seen = []
    res = train(
        [task],
        params,
        tc,
        data_seeds=[7],
        progress=False,
        on_log=lambda step, p: seen.append((step, p["W_out1"].clone())),
    )
    P = {k: v.to(torch.float32).clone().requires_grad_(True) for k, v in params.items()}
    groups = [
        {"params": [P[k] for k in P if k != "nu"], "weight_decay": 0.03},
        {"params": [P["nu"]], "weight_decay": 0.0},
    ]
    if optimiser == "adam_l2":
        opt = torch.optim.Adam(groups, lr=lr)
    else:
        opt = torch.optim.SGD(groups, lr=lr)
    g = torch.Generator().manual_seed(7)
    for step in range(tc.steps):
        if step % tc.chunk_steps == 0:
            x, y = task.sample(tc.chunk_steps * tc.batch_size, g)
            X = x.view(tc.chunk_steps, tc.batch_size, *x.shape[1:]).float()
            Y = y.view(tc.chunk_steps, tc.batch_size, *y.shape[1:]).float()
        i = step % tc.chunk_steps
        y_hat = gated_rnn_forward(X[i][None], P, mode="reference")
        loss = (y_hat - Y[i][None]).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    for k in P:
        torch.testing.assert_close(res.params[k], P[k].detach(), rtol=1e-5, atol=1e-7)
    assert [s for s, _ in seen] == [2, 4, 6]  # on_log at the end of every logged window
    torch.testing.assert_close(seen[-1][1], res.params["W_out1"])


def test_unknown_loss_optimiser_or_schedule_is_named():
    for field, value in (("loss", "hinge"), ("optimiser", "lion"), ("schedule", "step")):
        with pytest.raises(ValueError, match=f"unknown TrainConfig.{field} '{value}'"):
            TrainConfig(steps=3, **{field: value})
    assert cosine_lr(5, TrainConfig(steps=10, lr=0.3, schedule="constant")) == 0.3
