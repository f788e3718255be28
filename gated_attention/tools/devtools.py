"""Headless Chromium driven over the Chrome DevTools Protocol: the browser check's driver.

    find_chromium   the browser's executable ($CHROME, chromium or chromium-browser), or a
                    ChromiumMissingError that says how to install it
    Browser         one headless Chromium process and one websocket to its DevTools endpoint
    Tab             one page target: navigate, wait for it to settle, evaluate JavaScript,
                    and collect the events (console, network, log) of each visit

``browser_check`` opens the book's pages with it and decides what counts as a problem.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = [
    "DESKTOP",
    "ChromiumMissingError",
    "DevToolsError",
    "find_chromium",
    "Browser",
    "Tab",
]

DESKTOP = (1280, 900)
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
