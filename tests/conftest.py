"""Test set-up: one torch thread per test process (pytest -n 2 runs two on a 2-core machine),
the ``interrupt_at_chunk`` fixture of the checkpoint tests, ``build`` (a scorecard build
folder of a test's own), and the options of the built book's
browser check (tests/browser/test_pages.py, skipped without ``--book``)."""

import pytest
import torch

from gated_attention.engine import data
from gated_attention.report import scorecard

torch.set_num_threads(1)


def pytest_addoption(parser):
    group = parser.getgroup("book", "the built book's pages in Chromium (tests/browser)")
    group.addoption("--book", help="the built HTML to open, page by page (else: skipped)")
    group.addoption(
        "--strict-width",
        action="store_true",
        help="code and display math that scroll sideways fail a page (else: warnings)",
    )
    group.addoption("--phone", action="store_true", help="also every page 390 px wide (warnings)")


@pytest.fixture
def build(tmp_path, monkeypatch):
    """A build folder of the test's own for scorecard rows, and no rows of other tests."""
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path))
    monkeypatch.setattr(scorecard, "_SESSION", [])
    return tmp_path


@pytest.fixture(autouse=True)
def seeded():
    """Every test starts from the same global torch seed: a draw without its own generator is
    still the same draw on every run (tests that matter pass their own ``torch.Generator``)."""
    torch.manual_seed(0)


@pytest.fixture
def interrupt_at_chunk(monkeypatch):
    """``interrupt_at_chunk(n, run)`` runs ``run()`` with the engine's data sampler raising
    KeyboardInterrupt when it is called for the n-th time (a run killed mid-way), then restores
    the sampler."""
    real = data.sample_chunk_neuron_major

    def run_until(n, run):
        calls = {"n": 0}

        def interrupt(*args):
            calls["n"] += 1
            if calls["n"] == n:
                raise KeyboardInterrupt
            return real(*args)

        monkeypatch.setattr(data, "sample_chunk_neuron_major", interrupt)
        with pytest.raises(KeyboardInterrupt):
            run()
        monkeypatch.setattr(data, "sample_chunk_neuron_major", real)

    return run_until
