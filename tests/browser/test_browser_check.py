"""The browser check on tiny synthetic pages: each page has one fault and must fail with it; a
clean page passes. Code and display math that scroll sideways are warnings, errors with
``--strict-width``. Chromium is the one already on the machine or in Playwright's cache (the
tests that need it are skipped, with the reason, where there is none: ``make test`` installs one
first). The last tests run tests/browser/test_pages.py, the check of a built book, on a small
one. (pagecheck.py is what both read.)"""

import base64
import subprocess
import sys
from pathlib import Path

import pagecheck as bc
import pytest

# a 1 x 1 PNG
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


# a code cell's input and a display equation as the book's HTML has them (the equation as
# MathJax leaves it: an mjx-container of the equation's width, no overflow of its own)
CODE = (
    "<div class='cell docutils container'><div class='cell_input docutils container'>"
    "<div class='highlight-ipython3 notranslate'><div class='highlight'>"
    "<pre style='overflow-x: auto'>{}</pre></div></div></div></div>"
)
EQUATION = (
    "<div class='math notranslate nohighlight'><mjx-container class='MathJax' jax='CHTML' "
    "display='true' style='display: block'><mjx-math style='display: inline-block; "
    "width: {}px'>x</mjx-math></mjx-container></div>"
)


def _page(body: str, head: str = "") -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'>{head}</head><body>"
        f"<article style='width: 600px'><section id='top'>{body}</section></article>"
        "</body></html>"
    )


PAGES = {
    "clean.html": _page(
        "<h1 id='title'>Clean</h1><p>Text, <a href='other/target.html#here'>a link</a>, "
        "<a href='#title'>a fragment</a>.</p><img src='pixel.png' alt='pixel'>"
        "<pre>short</pre><table><tr><td>a</td><td>b</td></tr></table>"
        f"{CODE.format('short = 1')}{EQUATION.format(100)}"
    ),
    "other/target.html": _page("<p id='here'>target</p><a href='../clean.html'>back</a>"),
    "console.html": _page("<p>hi</p><script>console.error('boom from the page')</script>"),
    "exception.html": _page("<script>undefinedFunction()</script>"),
    "missing_image.html": _page("<img src='no-such-image.png' alt='missing'>"),
    "wide.html": _page("<pre>" + "x" * 400 + "</pre>"),
    "broken_link.html": _page(
        "<a href='nowhere.html'>gone</a> <a href='clean.html#no-such-id'>no anchor</a>"
    ),
    "raw_math.html": _page("<p>the sum $$\\sum_i x_i$$ and <span class='math'>\\(a\\)</span></p>"),
    "index.html": "<html><head><meta http-equiv='Refresh' content='0; url=clean.html' /></head>"
    "</html>",
    "genindex.html": _page("<script>console.error('never opened')</script>"),
    "wide_code.html": _page(CODE.format("x = " + "1 + " * 200 + "1")),
    "wide_math.html": _page(EQUATION.format(2000)),
    "gone.html": "<html><head><meta http-equiv='refresh' content='0; url=nowhere.html#x'></head>",
    "narrow.html": "<!doctype html><html><head><meta name='viewport' "
    "content='width=device-width, initial-scale=1'></head><body><article><pre>"
    + "x" * 60
    + "</pre></article></body></html>",
}
#: the pages of a small book for tests/browser/test_pages.py: one fault, and sideways scrolling
BOOK = {
    name: PAGES[name]
    for name in ("index.html", "clean.html", "other/target.html", "console.html", "wide_code.html")
}
TEST_PAGES = Path(__file__).with_name("test_pages.py")
REPO = Path(__file__).parents[2]


def _write(root, pages):
    for name, html in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(html)
    (root / "pixel.png").write_bytes(PIXEL)
    return root


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("site"), PAGES)


@pytest.fixture
def check(page, site):
    """The problems of one page of the site, by its name."""
    return lambda name, **kw: bc.check_page(page, site / name, site, timeout=20, **kw)


def _kinds(found):
    return {p.kind for p in found}


def test_a_clean_page_and_its_link_target_pass(check):
    assert check("clean.html") == []
    assert check("other/target.html") == []


def test_console_error_fails(check):
    (found,) = check("console.html")
    assert found.kind == "console-error" and "boom from the page" in found.detail
    assert found.page == "console.html"


def test_uncaught_exception_fails(check):
    found = check("exception.html")
    assert _kinds(found) == {"console-error"}
    assert any("undefinedFunction" in p.detail for p in found)


def test_missing_image_fails(check):
    # once: its console message "Failed to load resource" repeats the failed load
    assert _kinds(check("missing_image.html")) == {"broken-image", "failed-load"}


def test_wide_pre_inside_the_article_fails(check):
    (found,) = check("wide.html")
    assert found.kind == "wide-output" and found.overflow > 1000


def test_broken_links_fail(check):
    found = check("broken_link.html")
    assert _kinds(found) == {"broken-link"}
    assert any("nowhere.html" in p.detail for p in found)
    assert any("#no-such-id" in p.detail for p in found)


def test_untypeset_math_fails(check):
    found = check("raw_math.html")
    assert _kinds(found) == {"untypeset-math"} and len(found) == 2


def test_redirects_are_followed_and_index_pages_skipped(check, site):
    assert check("index.html") == []
    (found,) = check("gone.html")
    assert found.kind == "broken-link" and found.detail.startswith("no such file: file://")
    assert found.detail.endswith("/nowhere.html#x")
    names = [p.relative_to(site).as_posix() for p in bc.pages(site)]
    assert "genindex.html" not in names and "index.html" in names


def test_wide_code_is_a_warning(check):
    (found,) = check("wide_code.html")
    assert (found.kind, found.severity) == ("wide-code", "warning")
    assert found.detail.startswith("pre in #top:") and found.overflow > 500


def test_wide_display_math_is_a_warning(check):
    (found,) = check("wide_math.html")  # the innermost: the mjx-container, not its div.math
    assert (found.kind, found.severity) == ("wide-math", "warning")
    assert found.detail.startswith("mjx-container.MathJax in #top:") and found.overflow > 1000


def test_strict_width_makes_them_errors(check):
    found = check("wide_code.html", strict_width=True) + check("wide_math.html", strict_width=True)
    assert [(p.kind, p.severity) for p in found] == [("wide-code", "error"), ("wide-math", "error")]


@pytest.mark.browser_context_args(viewport=bc.PHONE, is_mobile=True)
def test_an_output_too_wide_for_a_phone_is_a_warning(check):
    (found,) = check("narrow.html", phone=True)
    assert (found.kind, found.severity) == ("wide-output", "warning")
    assert check("index.html", phone=True) == []


def test_an_output_that_fits_the_desktop_column_passes(check):
    assert check("narrow.html") == []


def test_the_report_names_the_page_and_its_errors():
    found = [
        bc.Problem("a.html", "wide-output", "pre in #s", overflow=300),
        bc.Problem("a.html", "wide-code", "pre", severity="warning", overflow=40),
        bc.Problem("a.html", "console-error", "console.error: boom"),
    ]
    assert bc.report("a.html", found) == (
        "a.html: 2 problems\n  wide-output: pre in #s\n  console-error: console.error: boom"
    )


def _run_pages(*args):
    """tests/browser/test_pages.py run on its own, as ``make browser`` runs it."""
    command = [sys.executable, "-m", "pytest", str(TEST_PAGES), "-p", "no:cacheprovider", *args]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    return result.returncode, result.stdout + result.stderr


def test_the_book_check_fails_on_a_faulty_page_and_names_it(browser_type_launch_args, tmp_path):
    root = _write(tmp_path, BOOK)
    code, out = _run_pages("--book", str(root))
    assert code == 1, out
    assert "1 failed, 4 passed, 1 skipped" in out
    assert "console.html: 1 problem\n  console-error: console.error: boom from the page" in out
    assert "PageWarning: wide_code.html: wide-code: pre in #top:" in out  # a warning, no failure
    code, out = _run_pages("--book", str(root), "--strict-width")
    assert code == 1 and "2 failed, 3 passed, 1 skipped" in out, out
    assert "wide_code.html: 1 problem\n  wide-code: pre in #top:" in out


def test_the_book_check_without_a_book(tmp_path):
    code, out = _run_pages()
    assert code == 0 and "2 skipped" in out and "no built book given" in out, out
    code, out = _run_pages("--book", str(tmp_path))
    assert code != 0 and f"no built pages under {tmp_path}" in out, out
