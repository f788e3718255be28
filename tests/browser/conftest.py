"""pytest-playwright's browser for the tests of this folder: the Chromium that ``browser_setup``
finds (with ``--book``: or installs; the run stops where there is none, else the tests that need
it are skipped), launched with the browser check's flags; its pages 1280 x 900."""

import pytest

from gated_attention.tools.browser_check import DESKTOP, FLAGS
from gated_attention.tools.browser_setup import BrowserMissingError, find_chromium


@pytest.fixture(scope="session")
def chromium(pytestconfig):
    book = pytestconfig.getoption("book")
    try:
        return find_chromium(install=book is not None)
    except BrowserMissingError as err:
        if book is None:
            pytest.skip(f"Chromium is not installed: {err}")
        pytest.exit(f"error: {err}", returncode=2)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args, chromium):
    return {**browser_type_launch_args, "executable_path": chromium, "args": FLAGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": DESKTOP, "device_scale_factor": 1}


@pytest.fixture(scope="session")
def base_url():
    """None: pages are opened by their file:// address. (pytest-playwright 0.10.0's own
    ``base_url``, an instance method, is deprecated by pytest 9.2: an error here.)"""
    return None
