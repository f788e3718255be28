"""What the browser check reads on each page of the built book, and what it counts as a problem.

    make browser    (python -m pytest tests/browser/test_pages.py --book _build/html --strict-width)

The check is a pytest module, ``tests/browser/test_pages.py``: one test per built page, on
pytest-playwright, whose browser is the Chromium that ``browser_setup`` finds or installs,
launched with ``FLAGS`` (no sandbox, nothing that reaches out to the network), its pages at a
1280 x 900 viewport. :func:`check_page` loads a page, lets it settle (``SETTLE_JS``: images,
fonts, MathJax's first typesetting), reads its DOM (``INSPECT_JS``) and records its console
messages and failed loads. A page fails on:

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
                    element of the target page has as its id (a redirect page, such as the
                    book's index.html, is not loaded: the page it leads to is checked)

and warns (``--strict-width``: fails) on code that scrolls sideways:

    wide-code       a code cell's input (``div.cell_input pre``) wider than its box or the column
    wide-math       a display equation (``div.math``, ``mjx-container[display]``) wider than its
                    box or the column

``--phone`` repeats the wide-output check at 390 px wide as warnings (they do not fail).

Links are checked here, not by Sphinx's ``linkcheck`` builder, which checks little of a book's
internal links. Sphinx 7.4's builder tests a link that is not http(s) only as a path relative to
the *source* file, fragment included (``os.path.exists("<source dir>/page.html#id")``): a
correct link to a built page, or any link with a fragment, is "broken" to it. A link MyST
resolved to another document reaches it as a bare ``#anchor``, which it leaves "unchecked"
(MyST's own cross-reference warnings, which the ``-W`` build already fails on, are all that
catches those), and it never sees the links of raw HTML, of notebook outputs or of the theme's
navigation. So the check reads every ``<a href>`` of the rendered page and follows the local ones
to the built file and its ids.
"""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = [
    "DESKTOP",
    "PHONE",
    "FLAGS",
    "SETTLE_JS",
    "INSPECT_JS",
    "PageWarning",
    "Problem",
    "pages",
    "event_problems",
    "link_problems",
    "dom_problems",
    "check_page",
    "report",
]

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
SKIPPED_PAGES = {"genindex.html", "search.html"}
SKIPPED_DIRS = {"_static", "_sources", "_images"}
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


class PageWarning(UserWarning):
    """A problem that does not fail the page: code or math that scrolls sideways (without
    ``--strict-width``), an output wider than a phone's column (``--phone``)."""


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
    :func:`check_page` records)."""
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


def _listeners(events: list[dict]) -> dict:
    """Handlers for a Playwright page's events that append them to ``events`` as plain dicts."""
    return {
        "console": lambda m: events.append({"event": "console", "type": m.type, "text": m.text}),
        "pageerror": lambda e: events.append({"event": "pageerror", "text": e.stack or str(e)}),
        "requestfailed": lambda r: events.append(
            {"event": "requestfailed", "url": r.url, "error": r.failure or "failed"}
        ),
        "response": lambda r: events.append(
            {"event": "response", "url": r.url, "status": r.status}
        ),
    }


def check_page(
    page,
    path: Path,
    root: Path,
    *,
    strict_width: bool = False,
    phone: bool = False,
    cache: dict[Path, set[str]] | None = None,
    timeout: float = 30.0,
) -> list[Problem]:
    """Every problem of the built page at ``path`` (under ``root``), loaded in ``page`` (a
    Playwright page, at its viewport). Code and display math that scroll sideways are warnings,
    errors with ``strict_width``; with ``phone`` only the wide outputs are read, as warnings.
    ``cache`` keeps the ids of the pages that links lead to from one call to the next."""
    rel = path.relative_to(root).as_posix()
    cache = {} if cache is None else cache
    target = redirect_target(path)
    if target is not None:  # checked where it leads, not loaded: its target is a page here too
        if phone:
            return []
        file, _, fragment = target.partition("#")
        href = (path.resolve().parent / file).as_uri() + (f"#{fragment}" if fragment else "")
        return link_problems(path.resolve(), rel, [href], [], cache)
    events: list[dict] = []
    listeners = _listeners(events)
    for name, handler in listeners.items():
        page.on(name, handler)
    try:
        page.goto(path.resolve().as_uri(), wait_until="load", timeout=timeout * 1000)
        state = page.evaluate(f"{SETTLE_JS}({int(timeout * 800)})")
        dom = page.evaluate(f"{INSPECT_JS}({'true' if phone else 'false'})")
    finally:
        for name, handler in listeners.items():
            page.remove_listener(name, handler)
    if phone:
        return dom_problems(rel, {"wide": dom["wide"]}, severity="warning")
    found = event_problems(rel, events)
    if state == "timeout":
        found.append(Problem(rel, "untypeset-math", "MathJax did not finish in time"))
    found += dom_problems(rel, dom, scrolling="error" if strict_width else "warning")
    found += link_problems(path.resolve(), rel, dom["links"], dom["ids"], cache)
    return found


def report(page: str, problems: list[Problem]) -> str:
    """What a page's test says: its problems of severity error, one a line, each with its kind."""
    errors = [p for p in problems if p.severity == "error"]
    lines = [f"{page}: {len(errors)} problem{'s' * (len(errors) != 1)}"]
    return "\n".join(lines + [f"  {p.kind}: {p.detail}" for p in errors])
