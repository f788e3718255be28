"""Guards: bad input and failed training end in an error that names the problem (the value,
the step, the member), before anything is computed on it, and nothing computed earlier is lost.
"""

import dataclasses
import math

import pytest
import torch

from gated_attention import GatedRNN
from gated_attention.engine import (
    NonFiniteLossError,
    TrainConfig,
    stack_students,
    train,
    train_ensemble,
)
from gated_attention.tasks import TeacherStudentTask

TINY = dict(log_every=2, chunk_steps=2, batch_size=4)


def students(n_members: int = 2, d: int = 3, seed: int = 0) -> list[GatedRNN]:
    return [GatedRNN(d, 4, 3, seed=seed + e) for e in range(n_members)]


def tasks(n_members: int = 2, d: int = 3) -> list[TeacherStudentTask]:
    return [TeacherStudentTask.from_seed(d, seed=e, T=4) for e in range(n_members)]


def stacked_nan(member: int, n_members: int = 2) -> tuple[dict, dict]:
    """Stacked students with one NaN weight in ``member``."""
    params, masks = stack_students(students(n_members))
    params["D"][member, 0, 0] = float("nan")
    return params, masks


# --- training: a non-finite loss stops the run ---------------------------------------------


@pytest.mark.parametrize("mode", ["fast", "reference"])
def test_a_nan_student_stops_training_naming_step_and_member(mode):
    params, masks = stacked_nan(member=1)
    c = TrainConfig(steps=6, mode=mode, **TINY)
    with pytest.raises(NonFiniteLossError) as err:
        train(tasks(), params, c, data_seeds=[0, 1], masks=masks, progress=False)
    msg = str(err.value)
    assert "member(s) [1]" in msg and "steps 1-2" in msg and "no checkpoint was written" in msg
    assert err.value.members == [1] and err.value.steps == (1, 2)
    assert isinstance(err.value, ValueError)
    partial = err.value.partial  # the run so far is not lost: member 0 trained and is finite
    assert partial.losses.shape == (1, 2) and math.isfinite(float(partial.losses[0, 0]))
    assert all(bool(torch.isfinite(v[0]).all()) for v in partial.params.values())


def test_a_huge_learning_rate_stops_training():
    """lr = 1e3 used to train to final_loss = nan without a word."""
    params, masks = stack_students(students())
    c = TrainConfig(steps=400, lr=1e3, **TINY)
    with pytest.raises(NonFiniteLossError, match=r"in steps 1-2 \(lr=1000, optimiser adamw"):
        train(tasks(), params, c, data_seeds=[0, 1], masks=masks, progress=False)


class PoisonedTask:
    """A teacher-student task whose targets turn NaN from its ``bad_call``-th sample call on
    (the engine draws one call per chunk): a run that goes non-finite at a known chunk."""

    def __init__(self, task, bad_call):
        self.task, self.bad_call, self.calls = task, bad_call, 0
        self.d, self.d_out, self.T = task.d, task.d_out, task.T
        self.loss_mask, self.loss_scale = task.loss_mask, task.loss_scale

    def sample(self, batch_size, generator):
        x, y = self.task.sample(batch_size, generator)
        self.calls += 1
        return x, (y * float("nan") if self.calls >= self.bad_call else y)


def test_the_error_names_the_last_good_checkpoint_and_none_is_written_after(tmp_path):
    """Chunks of 2 steps, a checkpoint after each; member 1's third chunk (steps 5-6) is NaN:
    the error names steps 5-6, member 1 and the checkpoint of step 4, which holds finite
    weights; the loss curve up to step 4 comes back with the error."""
    ckpt = tmp_path / "run.pt"
    params, masks = stack_students(students())
    ts = [tasks()[0], PoisonedTask(tasks()[1], bad_call=3)]
    c = TrainConfig(steps=10, checkpoint_every=2, **TINY)
    with pytest.raises(NonFiniteLossError) as err:
        train(ts, params, c, data_seeds=[0, 1], masks=masks, checkpoint=ckpt, progress=False)
    msg = str(err.value)
    assert "member(s) [1]" in msg and "steps 5-6" in msg
    assert f"the last checkpoint with finite weights is {ckpt} (step 4)" in msg
    assert err.value.checkpoint == ckpt and err.value.steps == (5, 6)
    state = torch.load(ckpt, weights_only=True)
    assert state["step"] == 4
    assert all(bool(torch.isfinite(v).all()) for v in state["params"].values())
    partial = err.value.partial
    assert partial.loss_steps.tolist() == [2, 4, 6]
    assert bool(torch.isfinite(partial.losses[:2]).all()) and partial.losses[2, 1].isnan()


def test_a_checkpoint_between_log_windows_is_not_written_over_a_diverged_run(tmp_path):
    """Logs every 4 steps, checkpoints every 2: NaN from step 5 is caught at the checkpoint of
    step 6 (the window so far is read back there), before it overwrites the good one of step 4."""
    ckpt = tmp_path / "run.pt"
    params, masks = stack_students(students())
    ts = [PoisonedTask(tasks()[0], bad_call=3), tasks()[1]]
    c = TrainConfig(steps=12, checkpoint_every=2, **{**TINY, "log_every": 4})
    with pytest.raises(NonFiniteLossError) as err:
        train(ts, params, c, data_seeds=[0, 1], masks=masks, checkpoint=ckpt, progress=False)
    assert err.value.members == [0] and err.value.steps == (5, 6)
    assert torch.load(ckpt, weights_only=True)["step"] == 4


def test_keep_trains_a_diverged_member_on():
    params, masks = stacked_nan(member=0)
    c = TrainConfig(steps=4, **TINY)
    res = train(
        tasks(), params, c, data_seeds=[0, 1], masks=masks, progress=False, on_nonfinite="keep"
    )
    assert bool(res.losses[:, 0].isnan().all()) and bool(torch.isfinite(res.losses[:, 1]).all())


def test_train_ensemble_passes_on_nonfinite_through():
    rnns = students()
    rnns[0].D.data[0, 0] = float("inf")
    c = TrainConfig(steps=2, **TINY)
    with pytest.raises(NonFiniteLossError, match=r"member\(s\) \[0\]"):
        train_ensemble(tasks(), rnns, c, data_seeds=[0, 1], progress=False)
    res = train_ensemble(tasks(), rnns, c, data_seeds=[0, 1], progress=False, on_nonfinite="keep")
    assert not math.isfinite(float(res.final_loss[0]))


def test_on_nonfinite_must_be_known():
    params, masks = stack_students(students())
    with pytest.raises(ValueError, match="on_nonfinite.*'ignore'"):
        train(
            tasks(), params, TrainConfig(steps=2, **TINY), data_seeds=[0, 1], on_nonfinite="ignore"
        )


# --- TrainConfig ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("lr", -1e-3, "TrainConfig.lr must be >= 0, got -0.001"),
        ("lr", float("nan"), "TrainConfig.lr must be a finite number, got nan"),
        ("lr", float("inf"), "TrainConfig.lr must be a finite number, got inf"),
        ("lr", "1e-3", "TrainConfig.lr must be a finite number, got '1e-3'"),
        ("weight_decay", -1e-4, "TrainConfig.weight_decay must be >= 0, got -0.0001"),
        ("weight_decay", float("nan"), "TrainConfig.weight_decay must be a finite number"),
        ("eta_min", -1.0, "TrainConfig.eta_min must be >= 0, got -1.0"),
        ("eta_min", float("inf"), "TrainConfig.eta_min must be a finite number, got inf"),
        ("eps", 0.0, "TrainConfig.eps must be > 0, got 0.0"),
        ("betas", (0.9, 1.0), "TrainConfig.betas[1] must lie in [0, 1), got 1.0"),
        ("betas", (-0.1, 0.9), "TrainConfig.betas[0] must lie in [0, 1), got -0.1"),
        ("betas", (0.9,), "TrainConfig.betas must be two numbers in [0, 1), got (0.9,)"),
        ("warmup_steps", -1, "warmup_steps must lie in [0, steps), got -1"),
        ("warmup_steps", 1.5, "TrainConfig.warmup_steps must be an integer >= 0, got 1.5"),
        ("steps", 0, "TrainConfig.steps must be a positive integer, got 0"),
    ],
)
def test_train_config_names_the_bad_field_and_value(field, value, needle):
    with pytest.raises(ValueError) as err:
        TrainConfig(**{"steps": 10, field: value})
    assert needle in str(err.value)


def test_train_config_accepts_edge_values():
    TrainConfig(steps=10, weight_decay=0.0, eta_min=0.0, betas=(0.0, 0.999), warmup_steps=0)
    TrainConfig(steps=10, lr=0.0)  # a control run: nothing moves
    dataclasses.replace(TrainConfig(steps=10), lr=1e-1)


# --- shapes ---------------------------------------------------------------------------------


def test_a_task_of_another_d_fails_before_any_step():
    params, masks = stack_students(students(d=4))
    with pytest.raises(
        ValueError, match=r"task has input size d=3 but the network is built for d=4"
    ):
        train(tasks(d=3), params, TrainConfig(steps=2, **TINY), data_seeds=[0, 1], masks=masks)


def test_a_custom_forward_that_does_not_fit_names_the_sizes():
    """forward given: the engine cannot read the layout, so the first step's error is wrapped
    with the task's sizes and the parameters' shapes."""
    params = {"W": torch.zeros(2, 4, 5)}  # (E, d_out, d): reads d = 5; the task has d = 3

    def forward(x, p):  # x (E, B, T, d) -> (E, B, T, d_out)
        return torch.einsum("ebtd,eod->ebto", x, p["W"])

    with pytest.raises(
        ValueError, match=r"first training step failed: tasks have d=3.*W \(2, 4, 5\)"
    ):
        train(tasks(d=3), params, TrainConfig(steps=2, **TINY), data_seeds=[0, 1], forward=forward)


def test_a_learning_rate_sweep_keeps_a_diverged_member():
    """Fig. 4's rate search expects members to diverge at its top rates (scored as infinitely
    bad by ``best_lrs``): its groups train with on_nonfinite="keep"."""
    from gated_attention.experiments import architectures as arch

    config = arch.architectures_config("smoke", "teacher")
    config = dataclasses.replace(config, families=("gated",), targets=(300,), lrs=(("gated", 1e3),))
    row = config.train_group(0, progress=False)
    assert not bool(torch.isfinite(row["eval_loss"]).any())
    assert not bool(torch.isfinite(row["losses"][-1]).any())


# --- the results cache ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PlantedExperiment:
    """An experiment whose compute returns planted tensors (for the results cache)."""

    name: str = "planted"
    nan_in: str = "params"

    def compute(self, *, checkpoint, progress):
        params = {"W_in1": torch.zeros(3, 2, 4), "nu": torch.zeros(3, 2)}
        curve = torch.zeros(3, 5)
        if self.nan_in == "params":
            params["W_in1"][2, 0, 0] = float("nan")
        if self.nan_in == "curve":  # e.g. no record at step 0: stored as it is
            curve[:, 0] = float("nan")
        if self.nan_in == "groups":  # a sweep's diverged member, per group: stored as it is
            params = {"group0": {"W": torch.full((2, 3), float("inf"))}}
        return {"params": params, "curve": curve}, {}


def test_the_cache_refuses_a_diverged_network_and_keeps_its_tensors(tmp_path, monkeypatch):
    from gated_attention import experiments as ex

    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))
    with pytest.raises(ValueError, match=r"params\['W_in1'\] of member\(s\) \[2\] hold NaN or inf"):
        ex.run(PlantedExperiment(), progress=False)
    (entry,) = tmp_path.iterdir()
    assert not (entry / "manifest.json").exists() and not (entry / "tensors.pt").exists()
    kept = torch.load(entry / "refused-tensors.pt", weights_only=True)
    assert kept["params"]["W_in1"][2, 0, 0].isnan()


@pytest.mark.parametrize("nan_in", ["curve", "groups"])
def test_the_cache_stores_nan_where_it_is_a_result(tmp_path, monkeypatch, nan_in):
    from gated_attention import experiments as ex

    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))
    first = ex.run(PlantedExperiment(nan_in=nan_in), progress=False)
    again = ex.run(PlantedExperiment(nan_in=nan_in), progress=False)
    assert not first.cached and again.cached


# --- teachers, constructions and sizes ------------------------------------------------------


def nan_in(name: str, value: float = float("nan")) -> dict:
    W = {k: torch.eye(3, dtype=torch.float64) for k in ("W_V", "W_K", "W_Q")}
    W[name][1, 2] = value
    return W


@pytest.mark.parametrize("name", ["W_V", "W_K", "W_Q"])
def test_linear_self_attention_refuses_non_finite_weights(name):
    from gated_attention.models.attention import LinearSelfAttention

    with pytest.raises(ValueError, match=rf"{name} holds NaN or inf \(1 of 9 entries.*\(1, 2\)"):
        LinearSelfAttention(**nan_in(name, float("inf")))


@pytest.mark.parametrize("name", ["W_V", "W_K", "W_Q"])
def test_construct_rnn_refuses_non_finite_weights(name):
    from gated_attention.constructions import construct_rnn
    from gated_attention.models.attention import random_attention

    att = random_attention(3, seed=0)
    with torch.no_grad():
        getattr(att, name)[0, 0] = float("nan")  # changed after the layer was built
    for variant in ("full", "side"):
        with pytest.raises(ValueError, match=rf"^{name} holds NaN or inf"):
            construct_rnn(att, variant)


def test_teacher_student_task_refuses_a_non_finite_teacher():
    from gated_attention.models.attention import random_attention

    teacher = random_attention(3, seed=0)
    with torch.no_grad():
        teacher.W_K[2, 1] = float("inf")
    with pytest.raises(ValueError, match=r"the teacher's W_K holds NaN or inf"):
        TeacherStudentTask(teacher, T=4)


def test_attention_input_of_another_dtype_is_named():
    """float64 weights, float32 input: a message naming both dtypes, not a raw matmul error."""
    from gated_attention.models.attention import random_attention

    att = random_attention(3, seed=0, dtype=torch.float64)
    x = torch.randn(2, 4, 3)
    for mode in ("parallel", "recurrent"):
        with pytest.raises(ValueError, match=r"x is torch.float32 but the attention weights are "):
            att(x, mode=mode)
    assert att(x.double()).dtype == torch.float64


@pytest.mark.parametrize("d", [-2, 0, 2.5, True, "4"])
def test_neuron_count_refuses_a_nonsensical_d(d):
    from gated_attention.constructions import (
        attention_parameter_count,
        neuron_count,
        parameter_count,
    )

    for count in (
        lambda: neuron_count("full", d),
        lambda: parameter_count("symmetric", d),
        lambda: attention_parameter_count(d),
    ):
        with pytest.raises(ValueError, match=rf"d must be a positive integer, got {d!r}"):
            count()


def test_neuron_count_refuses_ranks_out_of_range():
    from gated_attention.constructions import neuron_count

    with pytest.raises(ValueError, match=r"r_V must be a positive integer, got 0"):
        neuron_count("low_rank", 4, r_V=0)
    with pytest.raises(
        ValueError, match=r"r_KQ \(a rank of a d x d matrix\) must be <= d=4, got 5"
    ):
        neuron_count("low_rank", 4, r_KQ=5)
    assert neuron_count("low_rank", 4, r_V=2, r_KQ=4) == {"n": 12, "m": 8}


@pytest.mark.parametrize("d", [0, -1, 1.5])
def test_random_attention_refuses_a_nonsensical_d(d):
    from gated_attention.models.attention import random_attention

    with pytest.raises(ValueError, match=rf"d must be a positive integer, got {d!r}"):
        random_attention(d, seed=0)


def test_reverse_engineer_names_both_sizes():
    from gated_attention.analysis import network
    from gated_attention.analysis.reverse_engineer import reverse_engineer
    from gated_attention.constructions import construct_rnn
    from gated_attention.models.attention import random_attention

    student = network(construct_rnn(random_attention(4, seed=0)))
    with pytest.raises(ValueError, match=r"student maps d=4 to d_out=4, the teacher d=3 to d_v=3"):
        reverse_engineer(student, random_attention(3, seed=0), T=4, batch=8)


def test_gated_rnn_names_both_dtypes_for_an_input_of_another_dtype():
    from gated_attention import GatedRNN

    rnn = GatedRNN(3, 4, 4, dtype=torch.float64)
    with pytest.raises(
        TypeError, match="x is torch.float32 but the network's weights are torch.float64"
    ):
        rnn(torch.randn(2, 5, 3))
    with pytest.raises(TypeError, match="float64"):
        rnn.hidden(torch.randn(2, 5, 3))
    assert rnn(torch.randn(2, 5, 3, dtype=torch.float64)).shape == (2, 5, 3)
