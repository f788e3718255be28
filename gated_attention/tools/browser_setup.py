"""Find a Chromium for the browser check, or install one.

    python -m gated_attention.tools.browser_setup          find or install; print its path
    python -m gated_attention.tools.browser_setup --find   only look (install nothing)

Where the browser comes from, first found wins:

1. a Chromium already on the machine: ``$CHROME``, else ``chromium``, else ``chromium-browser``
   on PATH;
2. Playwright's own Chromium: the one ``python -m playwright install chromium`` put in its cache,
   else that command run now (no root needed: it downloads a build from Playwright's servers);
   used only if it runs here (``--version``: a container may lack the libraries it needs);
3. as root on a machine with apt (Debian, Ubuntu): ``apt-get update`` and
   ``apt-get install -y chromium``.

When none works, :class:`BrowserMissingError` says the three ways to get one by hand. The exit
status of the command line is 0 with a browser, 2 without one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = [
    "BrowserMissingError",
    "system_chromium",
    "runs",
    "playwright_executable",
    "playwright_chromium",
    "install_playwright_chromium",
    "install_apt_chromium",
    "find_chromium",
    "main",
]

SYSTEM_NAMES = ("chromium", "chromium-browser")
#: seconds for `playwright install chromium`: a download of ~150 MB on a slow line fits; an
#: unreachable server fails within seconds (and within the connection timeout below)
PLAYWRIGHT_TIMEOUT = 600.0
#: milliseconds Playwright's downloader waits for a connection (its default is 30 s per try)
CONNECTION_TIMEOUT_MS = "15000"
APT_TIMEOUT = 900.0

HOW_TO = """One of these fixes it:
  1. install your system's Chromium (Debian/Ubuntu: `sudo apt-get install chromium`, older
     Ubuntu: `chromium-browser`), or set $CHROME to a Chromium or Chrome executable;
  2. let Playwright download its own: `.venv/bin/python -m playwright install chromium`
     (add `--with-deps` where the system libraries it needs are missing);
  3. run `make browser` (or `make test`) as root on a machine with apt-get, which installs
     Debian's chromium by itself."""


class BrowserMissingError(RuntimeError):
    """No Chromium was found and none could be installed."""


def _say(message: str) -> None:
    print(f"browser setup: {message}", file=sys.stderr, flush=True)


def system_chromium() -> str | None:
    """``$CHROME``, else ``chromium`` or ``chromium-browser`` on PATH; None if there is none."""
    chrome = os.environ.get("CHROME", "")
    if chrome and not shutil.which(chrome):
        _say(f"$CHROME={chrome!r} is not an executable; looking on PATH")
    for name in filter(None, (chrome, *SYSTEM_NAMES)):
        found = shutil.which(name)
        if found:
            return found
    return None


def runs(executable: str) -> bool:
    """Whether ``executable --version`` succeeds: a browser downloaded for another system, or
    without the system libraries it needs, fails here."""
    try:
        result = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    if result.returncode != 0:
        _say(f"{executable} does not run here: {_last_line(result)}")
        _say("(its system libraries: `.venv/bin/python -m playwright install-deps chromium`)")
    return result.returncode == 0


def playwright_executable() -> str | None:
    """Where Playwright keeps its Chromium (there or not), None without Playwright. Looked up in
    a thread of its own: Playwright's sync API does not start in a thread where it already runs
    (a test session of pytest-playwright)."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        return None

    def lookup() -> str:
        with sync_playwright() as p:
            return p.chromium.executable_path

    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(lookup).result()
    except Error:
        return None


def playwright_chromium() -> str | None:
    """The Chromium of Playwright's browser cache if it is installed there and runs, else
    None."""
    path = playwright_executable()
    return path if path and Path(path).is_file() and runs(path) else None


def install_playwright_chromium(timeout: float = PLAYWRIGHT_TIMEOUT) -> bool:
    """Run ``python -m playwright install chromium``; True if it succeeded in time."""
    command = [sys.executable, "-m", "playwright", "install", "chromium"]
    env = dict(os.environ)
    env.setdefault("PLAYWRIGHT_DOWNLOAD_CONNECTION_TIMEOUT", CONNECTION_TIMEOUT_MS)
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        _say(f"`playwright install chromium` did not finish in {timeout:.0f} s")
        return False
    except OSError as err:
        _say(f"`playwright install chromium` could not run: {err}")
        return False
    if result.returncode != 0:
        _say(f"`playwright install chromium` failed: {_last_line(result)}")
        return False
    return True


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def install_apt_chromium(timeout: float = APT_TIMEOUT) -> bool:
    """As root with apt-get: ``apt-get update`` and ``apt-get install -y chromium``; True if both
    succeeded. Not root, or no apt-get: False, without running anything."""
    apt = shutil.which("apt-get")
    if apt is None or not _is_root():
        _say("not root with apt-get: cannot install Debian's chromium")
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "chromium"]):
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, env=env, check=False
            )
        except subprocess.TimeoutExpired:
            _say(f"`{' '.join(command)}` did not finish in {timeout:.0f} s")
            return False
        if result.returncode != 0:
            _say(f"`{' '.join(command)}` failed: {_last_line(result)}")
            return False
    return True


def _last_line(result: subprocess.CompletedProcess) -> str:
    lines = [ln.strip() for ln in (result.stderr + result.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.lower().startswith(("error", "e:"))]
    return (errors or lines or [f"exit status {result.returncode}"])[0][:300]


def find_chromium(install: bool = True) -> str:
    """The path of a Chromium, found or (``install``) installed in the order of the module's
    docstring; :class:`BrowserMissingError` when there is none."""
    found = system_chromium() or playwright_chromium()
    if found:
        return found
    if not install:
        raise BrowserMissingError(f"no Chromium found for the browser check. {HOW_TO}")
    found = _install(
        "Playwright's Chromium (python -m playwright install chromium)",
        install_playwright_chromium,
        playwright_chromium,
    ) or _install(
        "Debian's chromium (apt-get install chromium)", install_apt_chromium, system_chromium
    )
    if found:
        return found
    raise BrowserMissingError(
        f"no Chromium found for the browser check, and none could be installed. {HOW_TO}"
    )


def _install(label: str, install: Callable[[], bool], look: Callable[[], str | None]) -> str | None:
    """Run one install step and look for the browser it should have brought; None if it failed."""
    _say(f"no Chromium found; installing {label} ...")
    start = time.monotonic()
    if not install():
        _say(f"{label}: gave up after {time.monotonic() - start:.0f} s")
        return None
    found = look()
    if found:
        _say(f"installed {found} in {time.monotonic() - start:.0f} s")
    else:
        _say(f"{label} installed, but no browser is found after it")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gated_attention.tools.browser_setup",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--find", action="store_true", help="only look; install nothing")
    args = parser.parse_args(argv)
    try:
        print(find_chromium(install=not args.find))
    except BrowserMissingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
