"""The browser the book's check drives: headless Chromium through Playwright's sync API.

``browser_check`` reads what a page shows; this module opens pages. ``Browser`` launches the
Chromium that ``browser_setup`` found, with ``FLAGS`` (no sandbox, nothing that reaches out to
the network); a ``Tab`` is one page at a viewport: it loads a file, waits for it to settle
(``SETTLE_JS``: images, fonts, MathJax's first typesetting), evaluates the DOM inspection
(``INSPECT_JS``) and records console messages and failed loads.
"""

from __future__ import annotations

__all__ = ["DESKTOP", "FLAGS", "SETTLE_JS", "INSPECT_JS", "BrowserError", "Browser", "Tab"]

DESKTOP = (1280, 900)
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
