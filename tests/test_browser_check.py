"""The browser check on tiny synthetic pages: each page has one fault and must fail with it; a
clean page passes. Code and display math that scroll sideways are warnings, errors with
``--strict-width``. One Chromium for the module, the one already on the machine or in
Playwright's cache (skipped, with the reason, where there is none: ``make test`` installs one
first)."""

import base64

import pytest

from gated_attention.tools import browser_check as bc

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
}
#: the pages of a second, smaller book: sideways scrolling only
SCROLLING = {
    name: PAGES[name]
    for name in ("clean.html", "other/target.html", "wide_code.html", "wide_math.html")
}


def _write(root, pages):
    for name, html in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(html)
    (root / "pixel.png").write_bytes(PIXEL)
    return root


@pytest.fixture(scope="module")
def chromium():
    try:
        return bc.find_chromium(install=False)
    except bc.BrowserMissingError as err:
        pytest.skip(f"Chromium is not installed: {err}")


def _by_page(found):
    by_page = {}
    for p in found:
        by_page.setdefault(p.page, []).append(p)
    return by_page


@pytest.fixture(scope="module")
def problems(tmp_path_factory, chromium):
    root = _write(tmp_path_factory.mktemp("site"), PAGES)
    return _by_page(bc.check_book(root, timeout=20, executable=chromium))


@pytest.fixture(scope="module")
def scrolling_book(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("scrolling"), SCROLLING)


def _kinds(problems, page):
    return {p.kind for p in problems.get(page, [])}


def test_a_clean_page_and_its_link_target_pass(problems):
    assert problems.get("clean.html", []) == []
    assert problems.get("other/target.html", []) == []


def test_console_error_fails(problems):
    (found,) = problems["console.html"]
    assert found.kind == "console-error" and "boom from the page" in found.detail


def test_uncaught_exception_fails(problems):
    assert "console-error" in _kinds(problems, "exception.html")
    assert any("undefinedFunction" in p.detail for p in problems["exception.html"])


def test_missing_image_fails(problems):
    assert {"broken-image", "failed-load"} <= _kinds(problems, "missing_image.html")


def test_wide_pre_inside_the_article_fails(problems):
    (found,) = problems["wide.html"]
    assert found.kind == "wide-output" and found.overflow > 1000


def test_broken_links_fail(problems):
    details = [p.detail for p in problems["broken_link.html"]]
    assert _kinds(problems, "broken_link.html") == {"broken-link"}
    assert any("nowhere.html" in d for d in details)
    assert any("#no-such-id" in d for d in details)


def test_untypeset_math_fails(problems):
    found = problems["raw_math.html"]
    assert {p.kind for p in found} == {"untypeset-math"} and len(found) == 2


def test_redirect_is_followed_and_index_pages_skipped(problems):
    assert "index.html" not in problems and "genindex.html" not in problems


def test_the_report_counts_by_kind():
    found = [
        bc.Problem("a.html", "wide-output", "pre", overflow=300),
        bc.Problem("a.html", "console-error", "boom"),
        bc.Problem("b.html", "wide-output", "table", severity="warning", overflow=20),
    ]
    report = bc.format_report(found, n_pages=2)
    assert "2 pages, 2 errors, 1 warnings" in report
    assert "ERROR a.html: console-error: boom" in report
    assert "  300 a.html: pre" in report


def test_wide_code_is_a_warning(problems):
    (found,) = problems["wide_code.html"]
    assert (found.kind, found.severity) == ("wide-code", "warning")
    assert found.detail.startswith("pre in #top:") and found.overflow > 500


def test_wide_display_math_is_a_warning(problems):
    (found,) = problems["wide_math.html"]  # the innermost: the mjx-container, not its div.math
    assert (found.kind, found.severity) == ("wide-math", "warning")
    assert found.detail.startswith("mjx-container.MathJax in #top:") and found.overflow > 1000


def test_strict_width_makes_them_errors(scrolling_book, chromium):
    found = bc.check_book(scrolling_book, timeout=20, executable=chromium, strict_width=True)
    assert sorted((p.page, p.kind, p.severity) for p in found) == [
        ("wide_code.html", "wide-code", "error"),
        ("wide_math.html", "wide-math", "error"),
    ]


def test_exit_status_passes_wide_code_fails_it_with_strict_width(scrolling_book, chromium, capsys):
    assert bc.main([str(scrolling_book)]) == 0
    out = capsys.readouterr().out
    assert "4 pages, 0 errors, 2 warnings" in out
    assert "widest code and display math" in out
    assert bc.main([str(scrolling_book), "--strict-width"]) == 1
    assert "4 pages, 2 errors, 0 warnings" in capsys.readouterr().out


def test_exit_status_without_a_browser_or_a_book(tmp_path, monkeypatch, capsys):
    assert bc.main([str(tmp_path)]) == 2
    assert "no built pages" in capsys.readouterr().err
    _write(tmp_path, SCROLLING)

    def missing(install=True):
        raise bc.BrowserMissingError("no Chromium found for the browser check. One of these")

    monkeypatch.setattr(bc, "find_chromium", missing)
    assert bc.main([str(tmp_path)]) == 2
    assert "error: no Chromium found" in capsys.readouterr().err


def test_events_that_are_problems():
    events = [
        {"event": "requestfailed", "url": "u", "error": "net::X"},
        {"event": "requestfailed", "url": "w", "error": "net::ERR_ABORTED"},  # cancelled
        {"event": "console", "type": "log", "text": "fine"},
        {"event": "console", "type": "error", "text": "Failed to load resource: net::X"},
        {"event": "response", "url": "v", "status": 404},
        {"event": "response", "url": "ok", "status": 200},
        {"event": "console", "type": "assert", "text": "Assertion failed"},
        {"event": "pageerror", "text": "ReferenceError: f is not defined\n    at file:///p:1:9"},
    ]
    found = bc.event_problems("p.html", events)
    assert [(p.kind, p.detail) for p in found] == [
        ("failed-load", "net::X: u"),
        ("failed-load", "HTTP 404: v"),
        ("console-error", "console.assert: Assertion failed"),
        ("console-error", "uncaught: ReferenceError: f is not defined (file:///p:1:9)"),
    ]


def test_the_report_lists_the_widest_code():
    found = [
        bc.Problem("a.html", "wide-code", "pre", severity="warning", overflow=40),
        bc.Problem("a.html", "wide-math", "mjx", severity="warning", overflow=90),
    ]
    report = bc.format_report(found, n_pages=1)
    assert "1 pages, 0 errors, 2 warnings" in report
    assert "warning wide-code       1" in report
    lines = report.splitlines()
    start = lines.index("widest code and display math (px beyond their box or column):")
    assert lines[start + 1 :] == [
        "     90 a.html: wide-math: mjx",
        "     40 a.html: wide-code: pre",
    ]


def test_no_chromium_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    monkeypatch.delenv("CHROME", raising=False)
    with pytest.raises(bc.BrowserMissingError, match="apt-get install chromium"):
        bc.find_chromium(install=False)
