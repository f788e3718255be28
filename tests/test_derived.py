"""Derived values of recorded runs: computed once, keyed by run, args and code."""

import json

import pytest

from dev.readings import ship
from gated_attention.readings import derived as dv
from gated_attention.readings import recall_scores as rr

MODULES = ["gated_attention.readings.recall_scores"]


@pytest.fixture
def fake_run(tmp_path, monkeypatch):
    """A recorded root in tmp with one run 'r' (only its manifest matters), and a tmp cache."""
    root = tmp_path / "recorded"
    (root / "r").mkdir(parents=True)
    (root / "r" / "manifest.json").write_text('{"tensors.pt": "abc"}')
    monkeypatch.setattr(dv, "RECORDED_ROOT", root)
    monkeypatch.setattr(dv, "recorded_names", lambda: ["r"])
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "cache"))
    return root


def counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value

    return compute, calls


def test_computed_once_then_read(fake_run):
    compute, calls = counting({"a": (1, 2.5), "b": float("nan")})
    first = dv.derived("r", "lab", {"x": 1}, compute, MODULES)
    second = dv.derived("r", "lab", {"x": 1}, compute, MODULES)
    assert calls == [1]
    assert first["a"] == [1, 2.5] and second["a"] == [1, 2.5]  # as JSON gives it
    assert second["b"] != second["b"]  # NaN survives


def test_new_args_run_or_code_is_a_new_key(fake_run):
    key = dv.derived_key("r", "lab", {"x": 1}, MODULES)
    assert dv.derived_key("r", "lab", {"x": 2}, MODULES) != key
    assert dv.derived_key("r", "other", {"x": 1}, MODULES) != key
    assert dv.derived_key("r", "lab", {"x": 1}, ["gated_attention.analysis.scores"]) != key
    (fake_run / "r" / "manifest.json").write_text('{"tensors.pt": "abd"}')  # re-recorded
    assert dv.derived_key("r", "lab", {"x": 1}, MODULES) != key


def test_code_key_follows_imports(monkeypatch):
    """A change to a module the computing module imports (not only to itself) changes the key."""
    base = dv._code(MODULES)
    real = dv.code_key.source_hash
    seen = []
    monkeypatch.setattr(dv.code_key, "source_hash", lambda mods: seen.extend(mods) or real(mods))
    assert dv._code(MODULES) == base
    assert "gated_attention.analysis.recall_algorithms" in seen
    assert "gated_attention.models.gated_rnn" in seen


def test_damaged_value_is_reported_and_recomputed(fake_run):
    compute, calls = counting({"v": 1})
    dv.derived("r", "lab", None, compute, MODULES)
    path = dv.cached_path("r", "lab", dv.derived_key("r", "lab", None, MODULES))
    stored = json.loads(path.read_text())
    stored["value"] = {"v": 2}  # altered without its checksum
    path.write_text(json.dumps(stored))
    with pytest.warns(UserWarning, match="damaged"):
        assert dv.derived("r", "lab", None, compute, MODULES) == {"v": 1}
    assert calls == [1, 1]


def test_shipped_value_is_read_without_the_cache(fake_run, tmp_path, monkeypatch):
    compute, calls = counting({"v": 3})
    with pytest.raises(FileNotFoundError, match="compute it"):
        ship("r", "lab", None, MODULES)
    dv.derived("r", "lab", None, compute, MODULES)
    shipped = ship("r", "lab", None, MODULES)
    assert shipped.parent == fake_run / "r"
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path / "empty"))
    assert dv.derived("r", "lab", None, compute, MODULES) == {"v": 3}
    assert calls == [1]


def test_unknown_run_and_no_modules_are_refused(fake_run):
    with pytest.raises(ValueError, match="no recorded run 'zz'"):
        dv.derived_key("zz", "lab", None, MODULES)
    with pytest.raises(ValueError, match="at least one module"):
        dv.derived_key("r", "lab", None, [])


@pytest.mark.parametrize(("run", "values"), rr.RECORDED_READINGS)
def test_the_chapter_readings_ship_current(run, values):
    """The readings the associative recall chapter makes ship beside their runs under the key of
    today's code (else a fresh clone recomputes them: `python -m dev.readings`)."""
    _, label, args = rr.reading_key(values)
    key = dv.derived_key(run, label, args, [rr.__name__])
    assert dv.shipped_path(run, label, key).exists(), (
        f"the reading {label} of {run} is stale or missing: run `python -m dev.readings` "
        "and commit the shipped file"
    )


def test_reading_refuses_an_unknown_kind():
    with pytest.raises(ValueError, match="values must be one of"):
        rr.recorded_reading("associative-recall-cpu", values="zz")


def test_shipping_leaves_current_readings_as_they_are(tmp_path, monkeypatch, capsys):
    """``python -m dev.readings`` with every reading current writes nothing into the package."""
    from dev import readings

    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))  # nothing cached

    def no_write(*args, **kwargs):  # a test never writes into the package's recorded runs
        raise AssertionError("readings stale: run `python -m dev.readings`")

    monkeypatch.setattr(readings, "ship", no_write)
    assert readings.main() == 0
    out = capsys.readouterr().out
    assert out.count("(already shipped)") == 2 and "derived-recall-scorecard-" in out
