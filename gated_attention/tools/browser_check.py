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

DESKTOP = (1280, 900)
PHONE = (390, 844)
SKIPPED_PAGES = {"genindex.html", "search.html"}
SKIPPED_DIRS = {"_static", "_sources", "_images"}
#: the problem kinds that are warnings unless ``--strict-width``
SCROLLING = ("wide-code", "wide-math")
#: Chromium's flags: no sandbox (root, containers), and nothing that reaches out to the network
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--mute-audio",
    "--allow-file-access-from-files",
]

# Waits for the page to settle: lazy images made eager and loaded, fonts, and MathJax's first
# typesetting (``startup.promise``). Returns "done", "none" (no MathJax) or "timeout".
SETTLE_JS = r"""
(async (limit) => {
  const deadline = Date.now() + limit;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const imgs = [...document.images].filter((i) => !i.complete);
  imgs.forEach((i) => { i.loading = "eager"; });
  await Promise.race([
    Promise.all(imgs.map((i) => new Promise((r) => {
      if (i.complete) return r();
      i.addEventListener("load", r); i.addEventListener("error", r);
    }))),
    sleep(limit / 2),
  ]);
  if (document.fonts) await Promise.race([document.fonts.ready, sleep(2000)]);
  const wantsMathJax = () => [...document.scripts].some((s) => /mathjax/i.test(s.src));
  while (Date.now() < deadline) {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      await Promise.race([MathJax.startup.promise, sleep(deadline - Date.now())]);
      return "done";
    }
    if (!wantsMathJax() && document.readyState === "complete") return "none";
    await sleep(50);
  }
  return "timeout";
})
"""

# Everything read from the DOM, as one JSON-able object. ``wideOnly`` skips all but the width
# checks (the phone run).
INSPECT_JS = r"""
((wideOnly) => {
  const root = document.querySelector("article") || document.querySelector("main")
    || document.querySelector("[role=main]") || document.body;
  const where = (el) => { const s = el.closest("section[id]"); return s ? s.id : ""; };
  const text = (el) => (el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 60);
  const describe = (el) => el.tagName.toLowerCase()
    + [...el.classList].slice(0, 2).map((c) => "." + c).join("");
  const column = root.clientWidth;
  // The elements of ``selector`` (``keep`` says which) wider than their box, their parent's box
  // (``byParent``) or the column; of nested ones, the innermost.
  const measure = (selector, keep, byParent) => {
    const flagged = [];
    root.querySelectorAll(selector).forEach((el) => {
      if (!keep(el)) return;
      if (el.scrollWidth === 0 && el.clientWidth === 0) return;
      const parent = byParent ? (el.parentElement || el) : el;
      const width = el.getBoundingClientRect().width;
      const over = Math.max(el.scrollWidth - el.clientWidth,
        parent.scrollWidth - parent.clientWidth, width - column);
      if (over > 1) flagged.push([el, {
        element: describe(el), section: where(el), text: text(el),
        content: el.scrollWidth, box: el.clientWidth,
        container: parent.scrollWidth, containerBox: parent.clientWidth, column: column,
      }]);
    });
    return flagged
      .filter(([el]) => !flagged.some(([other]) => other !== el && el.contains(other)))
      .map(([, info]) => info);
  };
  const wide = measure("div.cell_output pre, .output, table, pre",
    (el) => !el.closest(".cell_input"), true);
  const wideCode = measure("div.cell_input pre", () => true, false);
  const wideMath = measure("div.math, mjx-container[display]", () => true, false);
  if (wideOnly) return {wide, wideCode, wideMath};
  const images = [...document.images]
    .filter((i) => i.complete && i.naturalWidth === 0)
    .map((i) => ({src: i.getAttribute("src") || "", section: where(i)}));
  const untypeset = [];
  root.querySelectorAll(".math").forEach((el) => {
    if (el.tagName !== "MJX-CONTAINER" && !el.querySelector("mjx-container"))
      untypeset.push({section: where(el), text: text(el)});
  });
  const raw = /\$\$|\\\(|\\\[|\\begin\{|\$[^$\s][^$\n]*\\[A-Za-z]+[^$\n]*\$/;
  const skip = "script, style, pre, code, textarea, kbd, mjx-container, .math, .highlight";
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest(skip)) continue;
    const m = node.textContent.match(raw);
    if (m) untypeset.push({section: where(parent),
      text: node.textContent.slice(Math.max(0, m.index - 20), m.index + 40).trim()});
  }
  const mathErrors = [...root.querySelectorAll("mjx-merror")]
    .map((el) => ({section: where(el), text: el.getAttribute("data-mjx-error") || text(el)}));
  const links = [...document.querySelectorAll("a[href]")].map((a) => a.href);
  const ids = [...document.querySelectorAll("[id]")].map((el) => el.id)
    .concat([...document.querySelectorAll("a[name]")].map((a) => a.name));
  return {wide, wideCode, wideMath, images, untypeset, mathErrors, links, ids};
})
"""


class BrowserError(RuntimeError):
    """Chromium did not start, or a page did not load or answer in time."""


def _first_line(err: Exception) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:300]


class Browser:
    """One headless Chromium, launched by Playwright; :meth:`tab` opens pages in it."""

    def __init__(self, executable: str, timeout: float = 30.0):
        from playwright.sync_api import Error, sync_playwright

        self.timeout = timeout
        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=executable, args=FLAGS, headless=True, timeout=timeout * 1000
            )
        except Error as err:
            self._playwright.stop()
            raise BrowserError(
                f"Chromium ({executable}) did not start: {_first_line(err)}"
            ) from err

    def tab(self, viewport: tuple[int, int] = DESKTOP) -> Tab:
        """A new page at ``viewport`` (narrower than 600 px: a phone), in its own context."""
        width, height = viewport
        context = self._browser.new_context(
            viewport={"width": width, "height": height},
            device_scale_factor=1,
            is_mobile=width < 600,
        )
        return Tab(context, self.timeout)

    def close(self) -> None:
        """End the browser and Playwright's driver."""
        try:
            self._browser.close()
        finally:
            self._playwright.stop()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Tab:
    """One page: load a URL, let it settle, evaluate JavaScript, and keep the events of each
    visit (console messages, uncaught exceptions, failed requests, HTTP errors) as plain dicts
    for :func:`event_problems`."""

    def __init__(self, context, timeout: float):
        self.context = context
        self.timeout = timeout
        self.page = context.new_page()
        self.events: list[dict] = []
        self.page.on("console", self._on_console)
        self.page.on("pageerror", self._on_pageerror)
        self.page.on("requestfailed", self._on_requestfailed)
        self.page.on("response", self._on_response)

    def _on_console(self, message) -> None:
        url = (message.location or {}).get("url", "")
        self.events.append(
            {"event": "console", "type": message.type, "text": message.text, "url": url}
        )

    def _on_pageerror(self, error) -> None:
        self.events.append({"event": "pageerror", "text": error.stack or str(error)})

    def _on_requestfailed(self, request) -> None:
        self.events.append(
            {"event": "requestfailed", "url": request.url, "error": request.failure or "failed"}
        )

    def _on_response(self, response) -> None:
        self.events.append({"event": "response", "url": response.url, "status": response.status})

    def open(self, url: str) -> tuple[list[dict], str | None]:
        """Load ``url`` and let it settle; returns its events and the MathJax state (or
        ``"navigation failed: ..."``)."""
        from playwright.sync_api import Error
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.events = []
        try:
            self.page.goto(url, wait_until="load", timeout=self.timeout * 1000)
        except PlaywrightTimeout as err:
            raise BrowserError(f"timed out loading the page: {_first_line(err)}") from err
        except Error as err:
            return list(self.events), f"navigation failed: {_first_line(err)}"
        state = self.evaluate(f"{SETTLE_JS}({int(self.timeout * 1000 * 0.8)})")
        return list(self.events), state

    def evaluate(self, expression: str):
        """The value of a JavaScript expression (promises awaited)."""
        from playwright.sync_api import Error

        try:
            return self.page.evaluate(expression)
        except Error as err:
            raise BrowserError(f"page script failed: {_first_line(err)}") from err

    def close(self) -> None:
        """Close the page and its context (after a page that did not settle)."""
        from playwright.sync_api import Error

        try:
            self.context.close()
        except Error:
            pass


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
