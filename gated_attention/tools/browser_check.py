"""Open every page of the built book in headless Chromium and report what a reader would see go
wrong.

    python -m gated_attention.tools.browser_check _build/html
    python -m gated_attention.tools.browser_check _build/html --phone --report report.txt
    python -m gated_attention.tools.browser_check _build/html --strict-width

One browser, pages in sequence, a timeout per page. The browser is driven with Playwright (one
page reused for every page of the book) at a 1280 x 900 viewport; which Chromium, and its install
where there is none, is ``browser_setup``'s business. A page fails on:

    console-error   console.error or console.assert, an uncaught exception, a browser log entry
                    of level error
    failed-load     a resource that failed to load, or answered 4xx/5xx
    broken-image    an <img> that finished loading with no picture (naturalWidth 0)
    untypeset-math  math MathJax left as TeX: a ``.math`` element without ``mjx-container``,
                    raw ``$$``, ``\\(``, ``\\[``, ``\\begin{`` or ``$...\\cmd...$`` text, or a
                    MathJax error box (checked once ``MathJax.startup.promise`` has settled)
    wide-output     an output block (``div.cell_output pre``, ``.output``, a table, a ``<pre>``
                    outside the code cells' inputs) wider than its box or its column
    broken-link     a link to a local file that does not exist, or to a ``#fragment`` that no
                    element of the target page has as its id

and warns (``--strict-width``: fails) on code that scrolls sideways:

    wide-code       a code cell's input (``div.cell_input pre``) wider than its box or the column
    wide-math       a display equation (``div.math``, ``mjx-container[display]``) wider than its
                    box or the column

``--phone`` repeats the wide-output check at 390 px wide as warnings (they do not fail). Exit
status: 0 no page failed, 1 one did, 2 the check could not run (no Chromium, no book).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .browser_driver import DESKTOP, INSPECT_JS, Browser, BrowserError, Tab
from .browser_setup import BrowserMissingError, find_chromium

__all__ = [
    "Problem",
    "BrowserError",
    "BrowserMissingError",
    "find_chromium",
    "pages",
    "check_book",
    "main",
]

PHONE = (390, 844)
SKIPPED_PAGES = {"genindex.html", "search.html"}
SKIPPED_DIRS = {"_static", "_sources", "_images"}
#: the problem kinds that are warnings unless ``--strict-width``
SCROLLING = ("wide-code", "wide-math")


@dataclasses.dataclass(frozen=True)
class Problem:
    """One thing wrong on one page; ``overflow`` (px) orders the wide outputs."""

    page: str
    kind: str
    detail: str
    severity: str = "error"
    overflow: int = 0


def pages(root: Path) -> list[Path]:
    """Every built page under ``root``, but the generated index, the search page and assets."""
    found = []
    for path in sorted(root.rglob("*.html")):
        rel = path.relative_to(root)
        if rel.parts[0] in SKIPPED_DIRS or rel.as_posix() in SKIPPED_PAGES:
            continue
        found.append(path)
    return found


#: console messages that repeat a failed load (reported as ``failed-load`` from the request)
NETWORK_MESSAGE = "Failed to load resource"
#: a request the page itself abandoned (a navigation away, a cancelled fetch): no problem
CANCELLED = "net::ERR_ABORTED"


def event_problems(page: str, events: list[dict]) -> list[Problem]:
    """Console errors, uncaught exceptions and failed loads among a page's events (the dicts
    :class:`Tab` records)."""
    found = []
    for event in events:
        detail = _event_detail(event)
        if detail:
            found.append(Problem(page, *detail))
    return found


def _event_detail(event: dict) -> tuple[str, str] | None:
    """``(kind, detail)`` for an event that is a problem, else None."""
    kind = event.get("event")
    if kind == "console" and event.get("type") in ("error", "assert"):
        text = event.get("text", "")
        if text.startswith(NETWORK_MESSAGE):
            return None
        return "console-error", f"console.{event['type']}: {text[:300]}"
    if kind == "pageerror":
        lines = [ln.strip() for ln in event.get("text", "").splitlines() if ln.strip()]
        origin = next((ln.removeprefix("at ") for ln in lines[1:] if ln.startswith("at ")), "")
        return "console-error", f"uncaught: {lines[0] if lines else ''}" + (
            f" ({origin})" if origin else ""
        )
    if kind == "requestfailed" and event.get("error") != CANCELLED:
        return "failed-load", f"{event.get('error', 'failed')}: {event.get('url', '?')}"
    if kind == "response" and event.get("status", 0) >= 400:
        return "failed-load", f"HTTP {event['status']}: {event.get('url', '')}"
    return None


class _Ids(HTMLParser):
    """The ids (and <a name>s) of an HTML file: the fragments a link to it may name."""

    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if value and (key == "id" or (tag == "a" and key == "name")):
                self.ids.add(value)


def html_ids(path: Path, cache: dict[Path, set[str]]) -> set[str]:
    """The ids of the page at ``path`` (parsed once per check)."""
    if path not in cache:
        parser = _Ids()
        parser.feed(path.read_text(errors="replace"))
        cache[path] = parser.ids
    return cache[path]


class _Refresh(HTMLParser):
    """The target of a ``<meta http-equiv="refresh">`` redirect, if the page is one."""

    def __init__(self):
        super().__init__()
        self.target: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = {k.lower(): v or "" for k, v in attrs}
        if tag == "meta" and attrs.get("http-equiv", "").lower() == "refresh":
            content = attrs.get("content", "")
            if "url=" in content.lower():
                self.target = content[content.lower().index("url=") + 4 :].strip(" '\"")


def redirect_target(path: Path) -> str | None:
    """Where a redirect page (such as the book's index.html) sends the reader, else None."""
    parser = _Refresh()
    parser.feed(path.read_text(errors="replace"))
    return parser.target


def link_problems(
    page: Path, rel: str, hrefs: list[str], own_ids: list[str], cache: dict[Path, set[str]]
) -> list[Problem]:
    """Links to local files that do not exist, or to fragments their target does not have."""
    found, seen = [], set()
    for href in hrefs:
        parts = urlsplit(href)
        if parts.scheme != "file" or href in seen:
            continue
        seen.add(href)
        target = Path(unquote(parts.path))
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            found.append(Problem(rel, "broken-link", f"no such file: {href}"))
            continue
        fragment = unquote(parts.fragment)
        if not fragment or target.suffix != ".html":
            continue
        ids = set(own_ids) if target == page else html_ids(target, cache)
        if fragment not in ids and parts.fragment not in ids:
            found.append(Problem(rel, "broken-link", f"no id #{fragment} in {target.name}"))
    return found


def dom_problems(
    rel: str, dom: dict, severity: str = "error", scrolling: str = "warning"
) -> list[Problem]:
    """Wide outputs, broken images and untypeset math read from the DOM (of ``severity``), and
    code and display math that scroll sideways (of ``scrolling``)."""
    found = [_wide_problem(rel, w, severity) for w in dom.get("wide", [])]
    found += [_wide_problem(rel, w, scrolling, "wide-code") for w in dom.get("wideCode", [])]
    found += [_wide_problem(rel, w, scrolling, "wide-math") for w in dom.get("wideMath", [])]
    for image in dom.get("images", []):
        found.append(Problem(rel, "broken-image", f"{image['src']} (#{image['section']})"))
    for item in dom.get("untypeset", []):
        found.append(Problem(rel, "untypeset-math", f"#{item['section']}: {item['text']!r}"))
    for item in dom.get("mathErrors", []):
        found.append(Problem(rel, "untypeset-math", f"#{item['section']}: error {item['text']}"))
    return found


def _wide_problem(rel: str, wide: dict, severity: str, kind: str = "wide-output") -> Problem:
    over = max(
        wide["content"] - wide["box"],
        wide["container"] - wide["containerBox"],
        wide["content"] - wide["column"],
    )
    detail = (
        f"{wide['element']} in #{wide['section']}: content {wide['content']} px in a "
        f"{wide['box']} px box (container {wide['container']}/{wide['containerBox']} px, "
        f"column {wide['column']} px): {wide['text']!r}"
    )
    return Problem(rel, kind, detail, severity, int(over))


def check_page(
    tab: Tab, path: Path, root: Path, cache: dict[Path, set[str]], scrolling: str = "warning"
) -> list[Problem]:
    """Every problem of one page at the tab's viewport; code and display math that scroll
    sideways are of severity ``scrolling``."""
    rel = path.relative_to(root).as_posix()
    target = redirect_target(path)
    if target is not None:  # checked where it leads, not loaded: its target is a page here too
        file, _, fragment = target.partition("#")
        href = (path.resolve().parent / file).as_uri() + (f"#{fragment}" if fragment else "")
        return link_problems(path.resolve(), rel, [href], [], cache)
    try:
        events, state = tab.open(path.resolve().as_uri())
        if state and state.startswith("navigation failed"):
            return [Problem(rel, "failed-load", state)]
        dom = tab.evaluate(f"{INSPECT_JS}(false)")
    except BrowserError as err:
        return [Problem(rel, "timeout", str(err))]
    found = event_problems(rel, events)
    if state == "timeout":
        found.append(Problem(rel, "untypeset-math", "MathJax did not finish in time"))
    found += dom_problems(rel, dom, scrolling=scrolling)
    found += link_problems(path.resolve(), rel, dom["links"], dom["ids"], cache)
    return found


def check_phone(tab: Tab, path: Path, root: Path) -> list[Problem]:
    """Wide outputs at the phone viewport, as warnings (code and math are not checked there)."""
    rel = path.relative_to(root).as_posix()
    if redirect_target(path) is not None:
        return []
    try:
        tab.open(path.resolve().as_uri())
        dom = tab.evaluate(f"{INSPECT_JS}(true)")
    except BrowserError as err:
        return [Problem(rel, "timeout", str(err), "warning")]
    return dom_problems(rel, {"wide": dom["wide"]}, severity="warning")


def check_book(
    root: Path,
    *,
    timeout: float = 30.0,
    phone: bool = False,
    strict_width: bool = False,
    executable: str | None = None,
    progress=None,
) -> list[Problem]:
    """Open every page under ``root``; the problems found, in page order. ``strict_width``
    makes code and display math that scroll sideways errors (else warnings)."""
    root = Path(root)
    found: list[Problem] = []
    cache: dict[Path, set[str]] = {}
    scrolling = "error" if strict_width else "warning"
    with Browser(executable or find_chromium(), timeout) as browser:
        tab = browser.tab(DESKTOP)
        for path in pages(root):
            if progress:
                progress(path.relative_to(root).as_posix())
            page_problems = check_page(tab, path, root, cache, scrolling)
            found += page_problems
            tab = _fresh_if_stuck(browser, tab, page_problems, DESKTOP)
        if phone:
            tab.close()
            tab = browser.tab(PHONE)
            for path in pages(root):
                page_problems = check_phone(tab, path, root)
                found += page_problems
                tab = _fresh_if_stuck(browser, tab, page_problems, PHONE)
    return found


def _fresh_if_stuck(
    browser: Browser, tab: Tab, problems: list[Problem], viewport: tuple[int, int]
) -> Tab:
    """A new tab in place of one whose page timed out; else the same tab."""
    if not any(p.kind == "timeout" for p in problems):
        return tab
    tab.close()
    return browser.tab(viewport)


def format_report(problems: list[Problem], n_pages: int, top: int = 10) -> str:
    """The report: every problem by page, then counts by kind, the widest outputs (errors) and
    the widest code and display math."""
    errors = [p for p in problems if p.severity == "error"]
    warnings = [p for p in problems if p.severity == "warning"]
    lines = []
    for label, group in (("ERROR", errors), ("warning", warnings)):
        for p in group:
            lines.append(f"{label} {p.page}: {p.kind}: {p.detail}")
    lines.append("")
    lines.append(f"{n_pages} pages, {len(errors)} errors, {len(warnings)} warnings")
    for (severity, kind), n in sorted(Counter((p.severity, p.kind) for p in problems).items()):
        lines.append(f"  {severity:7} {kind:15} {n}")
    widest = sorted((p for p in errors if p.kind == "wide-output"), key=lambda p: -p.overflow)[:top]
    if widest:
        lines.append("widest outputs (px beyond their box or column):")
        lines += [f"  {p.overflow:5d} {p.page}: {p.detail}" for p in widest]
    scrolling = sorted((p for p in problems if p.kind in SCROLLING), key=lambda p: -p.overflow)
    if scrolling:
        lines.append("widest code and display math (px beyond their box or column):")
        lines += [f"  {p.overflow:5d} {p.page}: {p.kind}: {p.detail}" for p in scrolling[:top]]
    return "\n".join(lines)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gated_attention.tools.browser_check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("root", nargs="?", default="_build/html", help="the built HTML")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per page")
    parser.add_argument("--phone", action="store_true", help="also a 390 px run (warnings)")
    parser.add_argument(
        "--strict-width",
        action="store_true",
        help="code and display math that scroll sideways fail the check (else: warnings)",
    )
    parser.add_argument("--report", help="also write the report to this file")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not pages(root):
        print(f"error: no built pages under {root} (build the book first)", file=sys.stderr)
        return 2
    try:
        executable = find_chromium()
        _say(f"browser: {executable}")
        problems = check_book(
            root,
            timeout=args.timeout,
            phone=args.phone,
            strict_width=args.strict_width,
            executable=executable,
            progress=lambda page: _say(f"  {page}"),
        )
    except (BrowserMissingError, BrowserError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    report = format_report(problems, len(pages(root)))
    print(report)
    if args.report:
        Path(args.report).write_text(report + "\n")
    return 1 if any(p.severity == "error" for p in problems) else 0


if __name__ == "__main__":
    sys.exit(main())
