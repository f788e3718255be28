"""Finding or installing the browser check's Chromium (tools/browser_setup.py), one test per
branch, with the machine mocked: PATH lookups, $CHROME, Playwright's cache, the install
subprocesses (succeeding, failing, timing out), root or not, apt-get present or not."""

import subprocess
import sys

import pytest

from gated_attention.tools import browser_setup as bs


class Machine:
    """A mocked machine: which executables are on PATH, whether Playwright's Chromium is in its
    cache, what the install commands do, and every command that was run."""

    def __init__(self, monkeypatch, on_path=(), playwright=None, root=False):
        self.on_path = {name: f"/usr/bin/{name}" for name in on_path}
        self.playwright = playwright
        self.root = root
        self.commands: list[list[str]] = []
        self.results: dict[str, object] = {}  # "playwright", "update", "install" -> rc or exc
        self.brings: dict[str, tuple[str, str]] = {}  # what a successful command installs
        monkeypatch.delenv("CHROME", raising=False)
        monkeypatch.setattr(bs.shutil, "which", self.which)
        monkeypatch.setattr(bs, "playwright_chromium", lambda: self.playwright)
        monkeypatch.setattr(bs.os, "geteuid", lambda: 0 if self.root else 1000)
        monkeypatch.setattr(bs.subprocess, "run", self.run)

    def which(self, name):
        if name.startswith("/"):
            return name if name in self.on_path.values() else None
        return self.on_path.get(name)

    def run(self, command, **kwargs):
        self.commands.append(list(command))
        key = "playwright" if "playwright" in command else command[1]
        outcome = self.results.get(key, 1)
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome == 0 and key in self.brings:
            where, value = self.brings[key]
            if where == "path":
                self.on_path[value] = f"/usr/bin/{value}"
            else:
                self.playwright = value
        return subprocess.CompletedProcess(command, outcome, "", "E: something went wrong\n")

    def ran(self, what):
        """The commands run of ``what``: "playwright", or apt-get's "update" or "install"."""
        if what == "playwright":
            return [c for c in self.commands if "playwright" in c]
        return [c for c in self.commands if c[0].endswith("apt-get") and c[1] == what]


PW_PATH = "/root/.cache/ms-playwright/chromium-1/chrome-linux64/chrome"


# (a) a Chromium already on the machine


def test_chrome_variable_comes_first(monkeypatch):
    machine = Machine(monkeypatch, on_path=["chromium"])
    machine.on_path["/opt/chrome/chrome"] = "/opt/chrome/chrome"  # $CHROME, a full path
    monkeypatch.setenv("CHROME", "/opt/chrome/chrome")
    assert bs.find_chromium() == "/opt/chrome/chrome"
    assert machine.commands == []


def test_chrome_variable_that_is_not_executable_falls_back_to_path(monkeypatch, capsys):
    machine = Machine(monkeypatch, on_path=["chromium"])
    monkeypatch.setenv("CHROME", "/nowhere/chrome")
    assert bs.find_chromium() == "/usr/bin/chromium"
    assert "$CHROME='/nowhere/chrome' is not an executable" in capsys.readouterr().err
    assert machine.commands == []


def test_chromium_on_path(monkeypatch):
    machine = Machine(monkeypatch, on_path=["chromium", "chromium-browser"], playwright=PW_PATH)
    assert bs.find_chromium() == "/usr/bin/chromium"
    assert machine.commands == []


def test_chromium_browser_on_path(monkeypatch):
    machine = Machine(monkeypatch, on_path=["chromium-browser"], playwright=PW_PATH)
    assert bs.find_chromium() == "/usr/bin/chromium-browser"
    assert machine.commands == []


# (b) Playwright's Chromium: in its cache, else `playwright install chromium`


def test_playwright_chromium_in_its_cache_before_any_install(monkeypatch):
    machine = Machine(monkeypatch, playwright=PW_PATH, root=True, on_path=["apt-get"])
    assert bs.find_chromium() == PW_PATH
    assert machine.commands == []


def test_playwright_install_that_succeeds(monkeypatch):
    machine = Machine(monkeypatch, root=True, on_path=["apt-get"])
    machine.results["playwright"] = 0
    machine.brings["playwright"] = ("playwright", PW_PATH)
    assert bs.find_chromium() == PW_PATH
    assert machine.commands == [[sys.executable, "-m", "playwright", "install", "chromium"]]


def test_playwright_install_that_succeeds_but_brings_nothing_goes_on(monkeypatch):
    machine = Machine(monkeypatch, root=True, on_path=["apt-get"])
    machine.results.update(playwright=0, update=0, install=0)
    machine.brings["install"] = ("path", "chromium")
    assert bs.find_chromium() == "/usr/bin/chromium"
    assert len(machine.ran("playwright")) == 1 and len(machine.ran("install")) == 1


@pytest.mark.parametrize(
    "outcome",
    [1, subprocess.TimeoutExpired("playwright", 600), OSError("no such file")],
    ids=["fails", "times-out", "cannot-run"],
)
def test_playwright_install_that_fails_goes_on_to_apt(monkeypatch, outcome, capsys):
    machine = Machine(monkeypatch, root=True, on_path=["apt-get"])
    machine.results.update(playwright=outcome, update=0, install=0)
    machine.brings["install"] = ("path", "chromium")
    assert bs.find_chromium() == "/usr/bin/chromium"
    assert machine.ran("playwright") and machine.ran("update")
    assert "`playwright install chromium`" in capsys.readouterr().err


def test_playwright_install_has_a_timeout_and_a_connection_timeout(monkeypatch):
    seen = {}

    def run(command, **kwargs):
        seen.update(kwargs)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.delenv("PLAYWRIGHT_DOWNLOAD_CONNECTION_TIMEOUT", raising=False)
    monkeypatch.setattr(bs.subprocess, "run", run)
    assert bs.install_playwright_chromium() is True
    assert seen["timeout"] == bs.PLAYWRIGHT_TIMEOUT
    assert seen["env"]["PLAYWRIGHT_DOWNLOAD_CONNECTION_TIMEOUT"] == bs.CONNECTION_TIMEOUT_MS


def test_playwright_chromium_reads_playwrights_cache(monkeypatch, tmp_path):
    """The real lookup: nothing in an empty cache, nor a browser there that does not run; the
    executable once it is there and runs. (Its own thread: a session of pytest-playwright's that
    runs Playwright in this one does not stop it.)"""
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    assert bs.playwright_chromium() is None
    executable = bs.playwright_executable()
    assert executable.startswith(str(tmp_path))
    chrome = tmp_path / executable
    chrome.parent.mkdir(parents=True)
    chrome.write_text(
        "#!/bin/sh\necho 'error while loading shared libraries: libnss3.so' >&2\nexit 127\n"
    )
    chrome.chmod(0o755)
    assert bs.playwright_chromium() is None  # there, but it does not run here
    chrome.write_text("#!/bin/sh\necho 'Chromium 1.0'\n")
    assert bs.playwright_chromium() == executable


# (c) Debian's chromium with apt-get, as root


def test_apt_as_root_installs_debians_chromium(monkeypatch):
    machine = Machine(monkeypatch, root=True, on_path=["apt-get"])
    machine.results.update(update=0, install=0)
    machine.brings["install"] = ("path", "chromium")
    assert bs.find_chromium() == "/usr/bin/chromium"
    apt = "/usr/bin/apt-get"
    assert machine.commands[1:] == [
        [apt, "update", "-qq"],
        [apt, "install", "-y", "-qq", "chromium"],
    ]


def test_apt_update_that_fails_installs_nothing(monkeypatch, capsys):
    machine = Machine(monkeypatch, root=True, on_path=["apt-get"])
    machine.results.update(update=100, install=0)
    with pytest.raises(bs.BrowserMissingError):
        bs.find_chromium()
    assert machine.ran("update") and not machine.ran("install")
    assert "E: something went wrong" in capsys.readouterr().err


def test_apt_install_that_times_out(monkeypatch):
    machine = Machine(monkeypatch, root=True, on_path=["apt-get"])
    machine.results.update(update=0, install=subprocess.TimeoutExpired("apt-get", 900))
    with pytest.raises(bs.BrowserMissingError):
        bs.find_chromium()
    assert machine.ran("install")


def test_not_root_runs_no_apt(monkeypatch):
    machine = Machine(monkeypatch, root=False, on_path=["apt-get"])
    machine.results.update(update=0, install=0)
    machine.brings["install"] = ("path", "chromium")
    with pytest.raises(bs.BrowserMissingError):
        bs.find_chromium()
    assert machine.commands == [[sys.executable, "-m", "playwright", "install", "chromium"]]


def test_root_without_apt_runs_no_apt(monkeypatch):
    machine = Machine(monkeypatch, root=True)
    with pytest.raises(bs.BrowserMissingError):
        bs.find_chromium()
    assert machine.commands == [[sys.executable, "-m", "playwright", "install", "chromium"]]


# none: the three ways, by hand


def test_none_names_the_three_ways(monkeypatch):
    Machine(monkeypatch)
    with pytest.raises(bs.BrowserMissingError) as err:
        bs.find_chromium()
    message = str(err.value)
    assert "none could be installed" in message
    assert "sudo apt-get install chromium" in message and "$CHROME" in message
    assert "python -m playwright install chromium" in message
    assert "as root on a machine with apt-get" in message


def test_find_only_installs_nothing(monkeypatch, capsys):
    machine = Machine(monkeypatch, root=True, on_path=["apt-get"])
    assert bs.main(["--find"]) == 2
    assert machine.commands == []
    assert "no Chromium found" in capsys.readouterr().err


def test_main_prints_the_browser(monkeypatch, capsys):
    Machine(monkeypatch, on_path=["chromium"])
    assert bs.main([]) == 0
    assert capsys.readouterr().out.strip() == "/usr/bin/chromium"


def test_no_chromium_on_this_machine_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path))
    monkeypatch.delenv("CHROME", raising=False)
    with pytest.raises(bs.BrowserMissingError, match="apt-get install chromium"):
        bs.find_chromium(install=False)
