"""pytest-playwright's browser for the tests of this folder: Chromium launched with the browser
check's flags (pagecheck.FLAGS), its pages 1280 x 900. The Chromium is ``$CHROME``, else
``chromium`` or ``chromium-browser`` on PATH, else Playwright's own (``python -m playwright
install chromium``); ``make test`` installs one first where there is none. Without one the tests
that need it are skipped, or, with ``--book``, the run stops and says so."""

import os
import shutil
from pathlib import Path

import pytest
from pagecheck import DESKTOP, FLAGS


def system_chromium() -> str | None:
    names = (os.environ.get("CHROME"), "chromium", "chromium-browser")
    return next(filter(None, (shutil.which(n) for n in names if n)), None)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args, browser_type, pytestconfig):
    executable = system_chromium()
    if executable is None and not Path(browser_type.executable_path).exists():
        why = "no Chromium: install one (make test does), set $CHROME, or run `python -m "
        why += "playwright install chromium`"
        if pytestconfig.getoption("book") is None:
            pytest.skip(why)
        pytest.exit(f"error: {why}", returncode=2)
    chosen = {"executable_path": executable} if executable else {}
    return {**browser_type_launch_args, **chosen, "args": FLAGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": DESKTOP, "device_scale_factor": 1}


@pytest.fixture(scope="session")
def base_url():
    """None: pages are opened by their file:// address. (pytest-playwright 0.10.0's own
    ``base_url``, an instance method, is deprecated by pytest 9.2: an error here.)"""
    return None
