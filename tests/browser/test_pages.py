"""Every page of the built book in headless Chromium (``make browser``): one test per page, which
fails with the page's problems (``pagecheck.py`` says which).

    python -m pytest tests/browser/test_pages.py --book _build/html [--strict-width] [--phone]

Without ``--book`` (the unit tests' run) they are skipped."""

import warnings
from pathlib import Path

import pagecheck
import pytest

SHOW_WARNINGS = "always::pagecheck.PageWarning"


def pytest_generate_tests(metafunc):
    config = metafunc.config
    if config.getoption("book") is None:
        skip = "no built book given (--book _build/html)"
    elif metafunc.definition.name == "test_page_on_a_phone" and not config.getoption("phone"):
        skip = "the phone run is asked for with --phone"
    else:
        root = Path(config.getoption("book"))
        found = pagecheck.pages(root)
        if not found:
            raise pytest.UsageError(f"no built pages under {root} (build the book first)")
        metafunc.parametrize("path", found, ids=[p.relative_to(root).as_posix() for p in found])
        return
    metafunc.parametrize("path", [pytest.param(None, marks=pytest.mark.skip(reason=skip))])


@pytest.fixture(scope="session")
def book(pytestconfig):
    return Path(pytestconfig.getoption("book"))


def warn(problems):
    for p in problems:
        if p.severity == "warning":
            warnings.warn(f"{p.page}: {p.kind}: {p.detail}", pagecheck.PageWarning, stacklevel=2)


@pytest.mark.filterwarnings(SHOW_WARNINGS)
def test_page(page, path, book, pytestconfig):
    strict = pytestconfig.getoption("strict_width")
    problems = pagecheck.check_page(page, path, book, strict_width=strict)
    warn(problems)
    if any(p.severity == "error" for p in problems):
        pytest.fail(pagecheck.report(path.relative_to(book).as_posix(), problems), pytrace=False)


@pytest.mark.filterwarnings(SHOW_WARNINGS)
@pytest.mark.browser_context_args(viewport=pagecheck.PHONE, is_mobile=True)
def test_page_on_a_phone(page, path, book):
    warn(pagecheck.check_page(page, path, book, phone=True))
