"""The browser check on tiny synthetic pages: each page has one fault and must fail with it; a
clean page passes. One Chromium for the module (skipped, with the reason, where there is none)."""

import base64

import pytest

from gated_attention.tools import browser_check as bc

# a 1 x 1 PNG
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
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
}


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    try:
        chromium = bc.find_chromium()
    except bc.ChromiumMissingError as err:
        pytest.skip(f"Chromium is not installed: {err}")
    root = tmp_path_factory.mktemp("site")
    for name, html in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(html)
    (root / "pixel.png").write_bytes(PIXEL)
    found = bc.check_book(root, timeout=20, executable=chromium)
    by_page = {}
    for p in found:
        by_page.setdefault(p.page, []).append(p)
    return by_page


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


def test_events_that_are_problems():
    events = [
        {
            "method": "Network.requestWillBeSent",
            "params": {"requestId": "1", "request": {"url": "u"}},
        },
        {"method": "Network.loadingFailed", "params": {"requestId": "1", "errorText": "net::X"}},
        {"method": "Runtime.consoleAPICalled", "params": {"type": "log", "args": []}},
        {"method": "Log.entryAdded", "params": {"entry": {"level": "error", "source": "network"}}},
        {"method": "Network.responseReceived", "params": {"response": {"status": 404, "url": "v"}}},
    ]
    found = bc.event_problems("p.html", events)
    assert [(p.kind, p.detail) for p in found] == [
        ("failed-load", "net::X: u"),
        ("failed-load", "HTTP 404: v"),
    ]


def test_no_chromium_says_how_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("CHROME", raising=False)
    with pytest.raises(bc.ChromiumMissingError, match="apt-get install chromium"):
        bc.find_chromium()
