"""Open every page of the built book in headless Chromium and report what a reader would see go
wrong.

    python -m gated_attention.tools.browser_check _build/html
    python -m gated_attention.tools.browser_check _build/html --phone --report report.txt

One browser, pages in sequence, a timeout per page. The browser is driven over the Chrome
DevTools Protocol (one websocket, one tab reused for every page) at a 1280 x 900 viewport. A page
fails on:

    console-error   console.error, an uncaught exception, a browser log entry of level error
    failed-load     a resource that failed to load, or answered 4xx/5xx
    broken-image    an <img> that finished loading with no picture (naturalWidth 0)
    untypeset-math  math MathJax left as TeX: a ``.math`` element without ``mjx-container``,
                    raw ``$$``, ``\\(``, ``\\[``, ``\\begin{`` or ``$...\\cmd...$`` text, or a
                    MathJax error box (checked once ``MathJax.startup.promise`` has settled)
    wide-output     an output block (``div.cell_output pre``, ``.output``, a table, a ``<pre>``
                    outside the code cells' inputs) wider than its box or its column
    broken-link     a link to a local file that does not exist, or to a ``#fragment`` that no
                    element of the target page has as its id

``--phone`` repeats the wide-output check at a 390 px wide viewport and reports it as warnings
(they do not fail the check). The exit status is 0 when no page failed, 1 when one did, 2 when
the check could not run (no Chromium, no book).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = [
    "Problem",
    "ChromiumMissingError",
    "find_chromium",
    "pages",
    "check_book",
    "format_report",
    "main",
]

DESKTOP = (1280, 900)
PHONE = (390, 844)
SKIPPED_PAGES = {"genindex.html", "search.html"}
SKIPPED_DIRS = {"_static", "_sources", "_images"}
INSTALL_HINT = (
    "no Chromium found: install it (Debian/Ubuntu: `sudo apt-get install chromium`, older "
    "Ubuntu: `chromium-browser`) or set $CHROME to a Chromium or Chrome executable"
)

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
# check (the phone run).
INSPECT_JS = r"""
((wideOnly) => {
  const root = document.querySelector("article") || document.querySelector("main")
    || document.querySelector("[role=main]") || document.body;
  const where = (el) => { const s = el.closest("section[id]"); return s ? s.id : ""; };
  const text = (el) => (el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 60);
  const describe = (el) => el.tagName.toLowerCase()
    + [...el.classList].slice(0, 2).map((c) => "." + c).join("");
  const wide = [];
  const flagged = [];
  const column = root.clientWidth;
  const selector = "div.cell_output pre, .output, table, pre";
  root.querySelectorAll(selector).forEach((el) => {
    if (el.closest(".cell_input")) return;
    if (el.scrollWidth === 0 && el.clientWidth === 0) return;
    const parent = el.parentElement || el;
    const width = el.getBoundingClientRect().width;
    const over = Math.max(el.scrollWidth - el.clientWidth, parent.scrollWidth - parent.clientWidth,
      width - column);
    if (over > 1) flagged.push([el, {
      element: describe(el), section: where(el), text: text(el),
      content: el.scrollWidth, box: el.clientWidth,
      container: parent.scrollWidth, containerBox: parent.clientWidth, column: column,
    }]);
  });
  flagged.forEach(([el, info]) => {
    if (!flagged.some(([other]) => other !== el && el.contains(other))) wide.push(info);
  });
  if (wideOnly) return {wide};
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
  return {wide, images, untypeset, mathErrors, links, ids};
})
"""


@dataclasses.dataclass(frozen=True)
class Problem:
    """One thing wrong on one page; ``overflow`` (px) orders the wide outputs."""

    page: str
    kind: str
    detail: str
    severity: str = "error"
    overflow: int = 0


class ChromiumMissingError(RuntimeError):
    """No Chromium executable was found."""


class DevToolsError(RuntimeError):
    """The browser answered a command with an error, or did not answer in time."""


def find_chromium() -> str:
    """$CHROME, else ``chromium`` or ``chromium-browser`` on PATH; ChromiumMissingError if none."""
    candidates = [os.environ.get("CHROME", ""), "chromium", "chromium-browser"]
    for name in filter(None, candidates):
        found = shutil.which(name)
        if found:
            return found
    raise ChromiumMissingError(INSTALL_HINT)


def pages(root: Path) -> list[Path]:
    """Every built page under ``root``, but the generated index, the search page and assets."""
    found = []
    for path in sorted(root.rglob("*.html")):
        rel = path.relative_to(root)
        if rel.parts[0] in SKIPPED_DIRS or rel.as_posix() in SKIPPED_PAGES:
            continue
        found.append(path)
    return found


class Browser:
    """A headless Chromium process and one websocket to its DevTools endpoint."""

    def __init__(self, executable: str, timeout: float = 30.0):
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="browser-check-")
        self._log = open(Path(self._profile) / "stderr.log", "w")
        self._process = subprocess.Popen(
            [executable, *self._flags()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
        )
        self._ws = None
        self._next_id = 0
        self.events: list[dict] = []
        try:
            self._connect()
        except BaseException:
            self.close()
            raise

    def _flags(self) -> list[str]:
        return [
            "--headless=new",
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
            f"--window-size={DESKTOP[0]},{DESKTOP[1]}",
            "--remote-debugging-port=0",
            f"--user-data-dir={self._profile}",
            "about:blank",
        ]

    def _connect(self) -> None:
        """Read the DevTools port Chromium writes to its profile folder, then open the socket."""
        import websocket

        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self._process.poll() is not None or time.monotonic() > deadline:
                log = (Path(self._profile) / "stderr.log").read_text()[-2000:]
                raise DevToolsError(f"Chromium did not start its DevTools endpoint:\n{log}")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        url = f"ws://127.0.0.1:{port}{path}"
        self._ws = websocket.create_connection(url, timeout=self.timeout, suppress_origin=True)

    def call(
        self,
        method: str,
        params: dict | None = None,
        session: str | None = None,
        timeout: float | None = None,
    ) -> dict:
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._ws.send(json.dumps(message))
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._receive(deadline, method)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise DevToolsError(f"{method}: {reply['error'].get('message', reply)}")
                return reply.get("result", {})

    def wait_for(self, event: str, session: str, start: int, timeout: float) -> dict:
        """The first ``event`` of ``session`` at or after index ``start`` of ``events``."""
        deadline = time.monotonic() + timeout
        index = start
        while True:
            for item in self.events[index:]:
                if item.get("method") == event and item.get("sessionId") == session:
                    return item
            index = len(self.events)
            self._receive(deadline, event)

    def _receive(self, deadline: float, waiting_for: str) -> dict:
        import websocket

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DevToolsError(f"timed out waiting for {waiting_for}")
        self._ws.settimeout(remaining)
        try:
            message = json.loads(self._ws.recv())
        except websocket.WebSocketTimeoutException as err:
            raise DevToolsError(f"timed out waiting for {waiting_for}") from err
        if "method" in message:
            self.events.append(message)
        return message

    def close(self) -> None:
        """Close the socket, end the browser (politely, then not) and remove its profile."""
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Tab:
    """One page target of the browser, attached in flat mode, with the domains we read on."""

    def __init__(self, browser: Browser, viewport: tuple[int, int] = DESKTOP):
        self.browser = browser
        self.target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attach = {"targetId": self.target, "flatten": True}
        self.session = browser.call("Target.attachToTarget", attach)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.resize(viewport)

    def close(self) -> None:
        """Close the tab (after a page that did not settle, so that the next one starts clean)."""
        try:
            self.browser.call("Target.closeTarget", {"targetId": self.target})
        except DevToolsError:
            pass

    def call(self, method: str, params: dict | None = None, timeout: float | None = None) -> dict:
        """A command for this tab."""
        return self.browser.call(method, params, self.session, timeout)

    def resize(self, viewport: tuple[int, int]) -> None:
        """Emulate a viewport ``(width, height)``; narrower than 600 px is a phone."""
        width, height = viewport
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
        )

    def open(self, url: str) -> tuple[list[dict], str | None]:
        """Load ``url`` and let it settle; returns its events and the MathJax state."""
        self.browser.events.clear()
        result = self.call("Page.navigate", {"url": url})
        if result.get("errorText"):
            return [], f"navigation failed: {result['errorText']}"
        self.browser.wait_for("Page.loadEventFired", self.session, 0, self.browser.timeout)
        state = self.evaluate(f"{SETTLE_JS}({int(self.browser.timeout * 1000 * 0.8)})")
        events = [e for e in self.browser.events if e.get("sessionId") == self.session]
        return events, state

    def evaluate(self, expression: str):
        """The value of a JavaScript expression (promises awaited)."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
        )
        if "exceptionDetails" in result:
            raise DevToolsError(f"page script failed: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")


def _remote_text(args: list[dict]) -> str:
    """The text of console arguments (RemoteObjects)."""
    parts = [str(a.get("value", a.get("description", a.get("type", "")))) for a in args]
    return " ".join(parts)[:300]


def event_problems(page: str, events: list[dict]) -> list[Problem]:
    """Console errors, exceptions, error log entries and failed loads among a page's events."""
    urls = {}
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            urls[params["requestId"]] = params["request"]["url"]
        detail = _event_detail(method, params, urls)
        if detail:
            found.append(Problem(page, *detail))
    return found


def _event_detail(method: str, params: dict, urls: dict) -> tuple[str, str] | None:
    """``(kind, detail)`` for an event that is a problem, else None."""
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        return "console-error", f"console.{params['type']}: {_remote_text(params.get('args', []))}"
    if method == "Runtime.exceptionThrown":
        details = params.get("exceptionDetails", {})
        text = details.get("exception", {}).get("description") or details.get("text", "")
        origin = f" ({details.get('url', '')}:{details.get('lineNumber', 0) + 1})"
        return "console-error", f"uncaught: {text.splitlines()[0] if text else ''}{origin}"
    if method == "Log.entryAdded":
        entry = params.get("entry", {})
        if entry.get("level") == "error" and entry.get("source") != "network":
            return "console-error", f"log ({entry.get('source')}): {entry.get('text', '')[:300]}"
    if method == "Network.loadingFailed" and not params.get("canceled"):
        url = urls.get(params.get("requestId"), "?")
        return "failed-load", f"{params.get('errorText', 'failed')}: {url}"
    if method == "Network.responseReceived":
        response = params.get("response", {})
        if response.get("status", 0) >= 400:
            return "failed-load", f"HTTP {response['status']}: {response.get('url', '')}"
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


def dom_problems(rel: str, dom: dict, severity: str = "error") -> list[Problem]:
    """Wide outputs, broken images and untypeset math read from the DOM."""
    found = [_wide_problem(rel, w, severity) for w in dom.get("wide", [])]
    for image in dom.get("images", []):
        found.append(Problem(rel, "broken-image", f"{image['src']} (#{image['section']})"))
    for item in dom.get("untypeset", []):
        found.append(Problem(rel, "untypeset-math", f"#{item['section']}: {item['text']!r}"))
    for item in dom.get("mathErrors", []):
        found.append(Problem(rel, "untypeset-math", f"#{item['section']}: error {item['text']}"))
    return found


def _wide_problem(rel: str, wide: dict, severity: str) -> Problem:
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
    return Problem(rel, "wide-output", detail, severity, int(over))


def check_page(tab: Tab, path: Path, root: Path, cache: dict[Path, set[str]]) -> list[Problem]:
    """Every problem of one page at the tab's viewport."""
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
    except DevToolsError as err:
        return [Problem(rel, "timeout", str(err))]
    found = event_problems(rel, events)
    if state == "timeout":
        found.append(Problem(rel, "untypeset-math", "MathJax did not finish in time"))
    found += dom_problems(rel, dom)
    found += link_problems(path.resolve(), rel, dom["links"], dom["ids"], cache)
    return found


def check_phone(tab: Tab, path: Path, root: Path) -> list[Problem]:
    """Wide outputs at the phone viewport, as warnings."""
    rel = path.relative_to(root).as_posix()
    if redirect_target(path) is not None:
        return []
    try:
        tab.open(path.resolve().as_uri())
        dom = tab.evaluate(f"{INSPECT_JS}(true)")
    except DevToolsError as err:
        return [Problem(rel, "timeout", str(err), "warning")]
    return dom_problems(rel, dom, severity="warning")


def check_book(
    root: Path,
    *,
    timeout: float = 30.0,
    phone: bool = False,
    executable: str | None = None,
    progress=None,
) -> list[Problem]:
    """Open every page under ``root``; the problems found, in page order."""
    root = Path(root)
    found: list[Problem] = []
    cache: dict[Path, set[str]] = {}
    with Browser(executable or find_chromium(), timeout) as browser:
        tab = Tab(browser, DESKTOP)
        for path in pages(root):
            if progress:
                progress(path.relative_to(root).as_posix())
            page_problems = check_page(tab, path, root, cache)
            found += page_problems
            tab = _fresh_if_stuck(tab, page_problems, DESKTOP)
        if phone:
            tab.resize(PHONE)
            for path in pages(root):
                page_problems = check_phone(tab, path, root)
                found += page_problems
                tab = _fresh_if_stuck(tab, page_problems, PHONE)
    return found


def _fresh_if_stuck(tab: Tab, problems: list[Problem], viewport: tuple[int, int]) -> Tab:
    """A new tab in place of one whose page timed out; else the same tab."""
    if not any(p.kind == "timeout" for p in problems):
        return tab
    tab.close()
    return Tab(tab.browser, viewport)


def format_report(problems: list[Problem], n_pages: int, top: int = 10) -> str:
    """The report: every problem by page, then counts by kind and the widest outputs."""
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
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gated_attention.tools.browser_check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("root", nargs="?", default="_build/html", help="the built HTML")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per page")
    parser.add_argument("--phone", action="store_true", help="also a 390 px run (warnings)")
    parser.add_argument("--report", help="also write the report to this file")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not pages(root):
        print(f"error: no built pages under {root} (build the book first)", file=sys.stderr)
        return 2
    try:
        problems = check_book(
            root,
            timeout=args.timeout,
            phone=args.phone,
            progress=lambda page: print(f"  {page}", file=sys.stderr, flush=True),
        )
    except (ChromiumMissingError, DevToolsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    report = format_report(problems, len(pages(root)))
    print(report)
    if args.report:
        Path(args.report).write_text(report + "\n")
    return 1 if any(p.severity == "error" for p in problems) else 0


if __name__ == "__main__":
    sys.exit(main())
