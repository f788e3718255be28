"""What the browser check (test_pages.py) reads on a built page, and what fails the page.

A page is loaded (file://) in pytest-playwright's Chromium at a 1280 x 900 viewport, left to
settle (``SETTLE_JS``: images, fonts, MathJax's first typesetting), and its DOM read
(``INSPECT_JS``). It fails on

    console-error   console.error or console.assert, or an uncaught exception
    failed-load     a resource that failed to load (not a request the page itself abandoned)
    broken-image    an <img> that finished loading with no picture (naturalWidth 0)
    untypeset-math  math MathJax left as TeX: a ``.math`` element without ``mjx-container``,
                    raw ``$$``, ``\\(``, ``\\[``, ``\\begin{`` or ``$...\\cmd...$`` text, or a
                    MathJax error box (read once ``MathJax.startup.promise`` has settled)
    wide-output     an output block (``div.cell_output pre``, ``.output``, a table, a ``<pre>``
                    outside the code cells' inputs) wider than its box or its column
    broken-link     a link to a local file that does not exist, or to a ``#fragment`` that no
                    element of the target page has as its id (a redirect page, such as the
                    book's index.html, is not loaded: where it leads is checked)

and warns (``--strict-width``: fails) on code that scrolls sideways:

    wide-code       a code cell's input (``div.cell_input pre``) wider than its box or the column
    wide-math       a display equation (``div.math``, ``mjx-container[display]``) wider than its
                    box or the column

The local links are followed here, on the rendered page: Sphinx's ``linkcheck`` builder (``make
linkcheck``) checks the external ones, but of a book's internal links it tests only paths
relative to the *source* file (a link to a built page, or any link with a fragment, is "broken"
to it; one MyST resolved reaches it as a bare ``#anchor``, left "unchecked"), and it never sees
the links of raw HTML, of notebook outputs or of the theme's navigation.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

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
#: console messages that repeat a failed load (reported as ``failed-load`` from the request)
NETWORK_MESSAGE = "Failed to load resource"
#: a request the page itself abandoned (a navigation away, a cancelled fetch): no problem
CANCELLED = "net::ERR_ABORTED"
IDS = re.compile(r"""\s(?:id|name)\s*=\s*["']?([^"'\s>]+)""")
REFRESH = re.compile(r"""<meta[^>]*http-equiv=["']?refresh[^>]*url=([^"'>]+)""", re.IGNORECASE)

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
        if rel.parts[0] not in SKIPPED_DIRS and rel.as_posix() not in SKIPPED_PAGES:
            found.append(path)
    return found


def event_problems(rel: str, page, failed: list) -> list[Problem]:
    """The console errors and uncaught exceptions of a loaded Playwright page, and its requests
    that ``failed`` (Playwright tells a request's failure only to a ``requestfailed`` listener)."""
    found = [
        Problem(rel, "console-error", f"console.{m.type}: {m.text[:300]}")
        for m in page.console_messages()
        if m.type in ("error", "assert") and not m.text.startswith(NETWORK_MESSAGE)
    ]
    found += [Problem(rel, "console-error", f"uncaught: {e.message}") for e in page.page_errors()]
    for request in failed:
        if request.failure != CANCELLED:
            found.append(Problem(rel, "failed-load", f"{request.failure}: {request.url}"))
    return found


def link_problems(page: Path, rel: str, hrefs: list[str], own_ids: list[str]) -> list[Problem]:
    """Links to local files that do not exist, or to fragments their target does not have."""
    found = []
    for href in dict.fromkeys(hrefs):
        parts = urlsplit(href)
        if parts.scheme != "file":
            continue
        target = Path(unquote(parts.path))
        target = target / "index.html" if target.is_dir() else target
        if not target.exists():
            found.append(Problem(rel, "broken-link", f"no such file: {href}"))
            continue
        if not parts.fragment or target.suffix != ".html":
            continue
        ids = set(own_ids) if target == page else set(IDS.findall(target.read_text()))
        if unquote(parts.fragment) not in ids and parts.fragment not in ids:
            found.append(Problem(rel, "broken-link", f"no id #{parts.fragment} in {target.name}"))
    return found


def dom_problems(
    rel: str, dom: dict, severity: str = "error", scrolling: str = "warning"
) -> list[Problem]:
    """Wide outputs, broken images and untypeset math read from the DOM (of ``severity``), and
    code and display math that scroll sideways (of ``scrolling``)."""
    found = [wide_problem(rel, w, severity) for w in dom.get("wide", [])]
    found += [wide_problem(rel, w, scrolling, "wide-code") for w in dom.get("wideCode", [])]
    found += [wide_problem(rel, w, scrolling, "wide-math") for w in dom.get("wideMath", [])]
    for image in dom.get("images", []):
        found.append(Problem(rel, "broken-image", f"{image['src']} (#{image['section']})"))
    for item in dom.get("untypeset", []):
        found.append(Problem(rel, "untypeset-math", f"#{item['section']}: {item['text']!r}"))
    for item in dom.get("mathErrors", []):
        found.append(Problem(rel, "untypeset-math", f"#{item['section']}: error {item['text']}"))
    return found


def wide_problem(rel: str, wide: dict, severity: str, kind: str = "wide-output") -> Problem:
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
    page, path: Path, root: Path, *, strict_width=False, phone=False, timeout=30.0
) -> list[Problem]:
    """Every problem of the built page at ``path`` (under ``root``), loaded in ``page`` (a new
    Playwright page, at its viewport). Code and display math that scroll sideways are warnings,
    errors with ``strict_width``; with ``phone`` only the wide outputs are read, as warnings."""
    rel = path.relative_to(root).as_posix()
    redirect = REFRESH.search(path.read_text())
    if redirect:  # checked where it leads, not loaded: its target is a page here too
        file, _, fragment = redirect.group(1).strip().partition("#")
        href = (path.resolve().parent / file).as_uri() + (f"#{fragment}" if fragment else "")
        return [] if phone else link_problems(path.resolve(), rel, [href], [])
    failed: list = []
    page.on("requestfailed", lambda request: failed.append(request))
    page.goto(path.resolve().as_uri(), wait_until="load", timeout=timeout * 1000)
    state = page.evaluate(f"{SETTLE_JS}({int(timeout * 800)})")
    dom = page.evaluate(f"{INSPECT_JS}({'true' if phone else 'false'})")
    if phone:
        return dom_problems(rel, {"wide": dom["wide"]}, severity="warning")
    found = event_problems(rel, page, failed)
    if state == "timeout":
        found.append(Problem(rel, "untypeset-math", "MathJax did not finish in time"))
    found += dom_problems(rel, dom, scrolling="error" if strict_width else "warning")
    return found + link_problems(path.resolve(), rel, dom["links"], dom["ids"])


def report(page: str, problems: list[Problem]) -> str:
    """What a page's test says: its problems of severity error, one a line, each with its kind."""
    errors = [p for p in problems if p.severity == "error"]
    lines = [f"{page}: {len(errors)} problem{'s' * (len(errors) != 1)}"]
    return "\n".join(lines + [f"  {p.kind}: {p.detail}" for p in errors])
