"""The README's quickstart runs as written (its Python snippets in this process, its command
lines as subprocesses; the one long run at the smoke profile: the same code path, seconds)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def quickstart_blocks() -> list[tuple[str, str]]:
    """(language, code) of every fenced block of the README's Quickstart section."""
    text = README.read_text()
    start = text.index("## Quickstart")
    section = text[start : text.index("\n## ", start + 1)]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def test_the_quickstart_has_two_python_snippets_and_the_command_lines():
    langs = [lang for lang, _ in quickstart_blocks()]
    assert langs == ["python", "python", "bash"]


def test_the_construction_snippet_prints_an_exact_construction(capsys):
    code = quickstart_blocks()[0][1]
    exec(compile(code, "README quickstart 1", "exec"), {})
    out = capsys.readouterr().out
    n, err = re.search(r"(\d+) neurons; max \|RNN - attention\| = (\S+)", out).groups()
    assert int(n) == 14 and float(err) < 1e-10  # rounding over T = 32 steps


@pytest.mark.slow
def test_the_training_snippet_finds_the_construction_s_states(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("GATED_ATTENTION_CACHE", str(tmp_path))
    namespace = {}
    exec(compile(quickstart_blocks()[1][1], "README quickstart 2", "exec"), namespace)
    found = namespace["workbench"].identify(namespace["trained"], namespace["task"])
    assert found.learned_attention  # the README's promise: the construction's states
    assert "Score KV, Score Q" in capsys.readouterr().out


def test_the_command_lines_run(tmp_path):
    lines = [
        line.split("#")[0].strip()
        for line in quickstart_blocks()[2][1].splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert all(line.startswith("python -m gated_attention ") for line in lines)
    env = {**os.environ, "GATED_ATTENTION_CACHE": str(tmp_path), "TQDM_DISABLE": "1"}
    for line in lines:
        args = line.split()[1:]
        if "--steps" in args:  # the long run: the same command at the smoke profile
            args[args.index("--profile") + 1] = "smoke"
            args[args.index("--steps") + 1] = "20"
        done = subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, env=env, timeout=600
        )
        assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"
        if "chosen" in line:
            assert "loaded the recorded run" in done.stdout


def test_the_readme_stays_a_first_page():
    """At most 1,300 words: the rest lives in the book's Reference page, which it links."""
    text = README.read_text()
    assert len(text.split()) <= 1300, f"README.md has {len(text.split())} words"
    assert "book/reference.md" in text and (README.parent / "book" / "reference.md").is_file()
