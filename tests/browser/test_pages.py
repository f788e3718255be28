"""Every page of the built book in headless Chromium (``make browser``): one test per page, which
fails with the page's problems (``gated_attention/tools/browser_check.py`` says which).

    python -m pytest tests/browser/test_pages.py --book _build/html [--strict-width] [--phone]

Without ``--book`` (the unit tests' run) they are skipped."""

import warnings
from pathlib import Path

import pytest

from gated_attention.tools import browser_check as bc

SHOW_WARNINGS = "always::gated_attention.tools.browser_check.PageWarning"


def pytest_generate_tests(metafunc):
    config = metafunc.config
    if config.getoption("book") is None:
        skip = "no built book given (--book _build/html)"
    elif metafunc.definition.name == "test_page_on_a_phone" and not config.getoption("phone"):
        skip = "the phone run is asked for with --phone"
    else:
        root = Path(config.getoption("book"))
        found = bc.pages(root)
        if not found:
            raise pytest.UsageError(f"no built pages under {root} (build the book first)")
        metafunc.parametrize("path", found, ids=[p.relative_to(root).as_posix() for p in found])
        return
    metafunc.parametrize("path", [pytest.param(None, marks=pytest.mark.skip(reason=skip))])


@pytest.fixture(scope="session")
def book(pytestconfig):
    return Path(pytestconfig.getoption("book"))


@pytest.fixture(scope="session")
def book_context(browser, browser_context_args):
    context = browser.new_context(**browser_context_args)
    yield context
    context.close()


@pytest.fixture
def tab(book_context):
    """One page for all the tests, kept from one to the next: the assets every page shares stay
    in its cache, which halves the run against pytest-playwright's ``page`` (a new context for
    each test). A test that raised closed it (its page may not have loaded or settled), and the
    next one gets a new page."""
    return book_context.pages[0] if book_context.pages else book_context.new_page()


@pytest.fixture(scope="session")
def ids():
    """The ids of the pages that links lead to, each read once."""
    return {}


def _warn(problems):
    for p in problems:
        if p.severity == "warning":
            warnings.warn(f"{p.page}: {p.kind}: {p.detail}", bc.PageWarning, stacklevel=2)


@pytest.mark.filterwarnings(SHOW_WARNINGS)
def test_page(tab, path, book, ids, pytestconfig):
    strict = pytestconfig.getoption("strict_width")
    try:
        problems = bc.check_page(tab, path, book, strict_width=strict, cache=ids)
    except Exception:
        tab.close()
        raise
    _warn(problems)
    if any(p.severity == "error" for p in problems):
        pytest.fail(bc.report(path.relative_to(book).as_posix(), problems), pytrace=False)


@pytest.mark.filterwarnings(SHOW_WARNINGS)
@pytest.mark.browser_context_args(viewport=bc.PHONE, is_mobile=True)
def test_page_on_a_phone(page, path, book):
    _warn(bc.check_page(page, path, book, phone=True))
