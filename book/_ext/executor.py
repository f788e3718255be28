"""The book's executor: execute the chapters once with papermill, and write plain notebooks (why
executed once and rendered apart: book/reference.md, "Architecture"). It is the book's, not the
package's: it runs from a checkout (``make execute``), beside the book's Sphinx extensions.

    python book/_ext/executor.py execute --profile quick    every chapter, in _toc.yml order
    python book/_ext/executor.py execute --profile smoke --only construction
    python book/_ext/executor.py notebooks --out notebooks  plain .ipynb for Jupyter, Colab
    python book/_ext/executor.py list                       the chapters

Each chapter ``book/<stem>.md`` (jupytext MyST) becomes ``book/<stem>.ipynb`` (git-ignored),
executed with ``cwd=book``, the ``profile`` parameter injected (``check_parameters``: papermill
would only warn where a chapter does not declare it) and no progress bars (``TQDM_DISABLE=1``);
jupyter-book then renders these notebooks with execution off. Each chapter is recorded right
after it ran (``record_chapter``) into the build's execution record, which the chapter
"Execution status" shows (``gated_attention.report.execution_status``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from gated_attention.atomic import atomic_write_json
from gated_attention.experiments.profiles import check_profile
from gated_attention.report import scorecard
from gated_attention.report.execution_status import ROOT, chapters, record_path


def versions() -> dict[str, str]:
    """Python, torch, numpy and gated_attention versions of this interpreter, and the device."""
    import numpy
    import torch

    from gated_attention import __version__

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "gated_attention": __version__,
        "device": os.environ.get("GATED_ATTENTION_DEVICE", "cpu"),
    }


def record_chapter(
    chapter: str, profile: str, wall_s: float | None, status: str = "ok", build: Path | None = None
) -> Path:
    """Add (or replace) one chapter's row of the execution record of ``profile``
    (``execution_status.record_path``); its path."""
    path = record_path(profile, build)
    data = json.loads(path.read_text()) if path.exists() else {"profile": profile, "chapters": {}}
    data["chapters"][chapter] = {
        "status": status,
        "wall_s": None if wall_s is None else round(float(wall_s), 1),
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **versions(),
    }
    atomic_write_json(path, data, indent=2)
    return path


#: chapters that time the machine: executed alone (no other chapter running), after the lanes
ALONE = ("performance",)

#: chapters that state a claim whose rows other chapters score too (``verdict.block``: the
#: construction's compressions are scored in "compressions"): executed after the lanes, so
#: that their verdict counts those rows
UNION_CLAIMS = ("construction",)

#: chapters that read the scorecard records of the others: executed after every other chapter
#: (in this order), wherever they stand in the table of contents
READ_RECORDS = ("intro", "execution_status", "scorecard")


def _lanes(n_chapters: int) -> int:
    """Chapters executed at once: $GATED_ATTENTION_LANES, else 2 on a machine with 2 or more
    cores (each lane's kernel then runs with cores / lanes threads), never more than chapters."""
    env = os.environ.get("GATED_ATTENTION_LANES")
    lanes = int(env) if env else min(2, os.cpu_count() or 1)
    if lanes < 1:
        raise ValueError(f"GATED_ATTENTION_LANES must be at least 1, got {env!r}")
    return max(1, min(lanes, n_chapters))


#: the book's measured chapter times (seconds, per profile): the lanes' order on a checkout
#: without its own log (a fresh clone)
SHIPPED_TIMES = Path(__file__).with_name("chapter_times.json")


def chapter_times(root: Path, profile: str) -> dict[str, float]:
    """Seconds per chapter in ``profile``: the book's measured times (SHIPPED_TIMES),
    updated by this checkout's log of its last execution (``_build/execution-times-*.json``)."""
    shipped = json.loads(SHIPPED_TIMES.read_text()).get(profile, {})
    log = root / "_build" / f"execution-times-{profile}.json"
    return {**shipped, **(json.loads(log.read_text()) if log.exists() else {})}


def _longest_first(paths: list[Path], root: Path, profile: str) -> list[Path]:
    """``paths`` by their time in ``profile`` (``chapter_times``), longest first (unknown
    ones first, in order), so that the lanes end together."""
    last = chapter_times(root, profile)
    return sorted(paths, key=lambda p: -last.get(p.stem, float("inf")))


def _execute_one(md: str, profile: str, threads: int | None) -> tuple[str, float | None, str]:
    """(chapter, seconds or None if it failed, the error) of one chapter executed with papermill;
    ``threads``: the kernel's torch threads (None: its default)."""
    import jupytext
    import nbformat
    import papermill

    path = Path(md)
    if threads is not None:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(threads)  # the kernel inherits them
    os.environ["TQDM_DISABLE"] = "1"
    out = path.with_suffix(".ipynb")
    nbformat.write(jupytext.read(path), out)
    params = {"profile": profile}
    start = time.perf_counter()
    try:
        check_parameters(out, params, papermill.inspect_notebook(str(out)))
        papermill.execute_notebook(
            str(out),
            str(out),
            parameters=params,
            kernel_name="python3",
            cwd=str(path.parent),
            progress_bar=False,
        )
    except Exception as err:  # papermill's errors carry the failing cell
        return path.stem, None, f"{type(err).__name__}: {str(err).strip()[:2000]}"
    seconds = round(time.perf_counter() - start, 1)
    hide_injected_parameters(out)
    return path.stem, seconds, ""


def check_parameters(notebook: Path, params: dict, declared: dict) -> None:
    """A ValueError naming every key of ``params`` that ``declared`` (the notebook's parameters
    cell, ``papermill.inspect_notebook``) lacks: papermill would only warn and run its default."""
    unknown = sorted(set(params) - set(declared))
    if unknown:
        have = ", ".join(declared) or "none (no cell tagged 'parameters')"
        raise ValueError(
            f"{notebook.name}: unknown parameter(s) {', '.join(map(repr, unknown))}; "
            f"its parameters cell declares: {have}"
        )


def hide_injected_parameters(path: Path) -> None:
    """Tag the cell papermill injects (``injected-parameters``) remove-cell, as the chapter's own
    parameters cell is: the rendered page does not open with it."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
            changed = True
    if changed:
        nbformat.write(nb, path)


def execution_order(paths: list[Path]) -> list[Path]:
    """``paths`` with the chapters of UNION_CLAIMS, then READ_RECORDS, moved to the end."""
    last = [p for name in UNION_CLAIMS + READ_RECORDS for p in paths if p.stem == name]
    return [p for p in paths if p not in last] + last


def _select(only: list[str] | None, root: Path) -> list[Path]:
    paths = chapters(root)
    if not only:
        return paths
    stems = {p.stem: p for p in paths}
    unknown = [s for s in only if s not in stems]
    if unknown:
        raise ValueError(f"unknown chapter(s) {unknown}; chapters are {', '.join(stems)}")
    return [stems[s] for s in only]


def execute(profile: str, only: list[str] | None = None, root: Path = ROOT) -> dict[str, float]:
    """Execute chapters with papermill in ``profile``; returns seconds per chapter.

    The chapters run in lanes (``_lanes``, the longest first), those of ALONE, UNION_CLAIMS and
    READ_RECORDS afterwards, one at a time. Every chapter is attempted; a RuntimeError lists the
    failures at the end. A run of every chapter first removes the profile's scorecard records
    (and recorded runs' rows): a failing chapter cannot hide behind records it wrote before.
    """
    check_profile(profile)
    os.environ["TQDM_DISABLE"] = "1"
    if only is None:
        shutil.rmtree(scorecard.build_dir() / "scorecard" / profile, ignore_errors=True)
        shutil.rmtree(scorecard.recorded_dir(), ignore_errors=True)
        (scorecard.build_dir() / "execution" / f"{profile}.json").unlink(missing_ok=True)
    times, failures = {}, []
    order = execution_order(_select(only, root))
    lanes = _lanes(len(order))
    after = ALONE + UNION_CLAIMS + READ_RECORDS
    parallel = [md for md in order if md.stem not in after] if lanes > 1 else []
    rest = [md for md in order if md not in parallel]

    def done(stem: str, seconds: float | None, error: str) -> None:
        if seconds is None:
            failures.append(f"{stem}: {error}")
            record_chapter(stem, profile, None, status="failed")
            print(f"[{profile}] {stem} FAILED", flush=True)
        else:
            times[stem] = seconds
            record_chapter(stem, profile, seconds)
            print(f"[{profile}] {stem} done in {seconds} s", flush=True)

    if parallel:
        _in_lanes(parallel, lanes, profile, root, done)
    for md in rest:  # alone: the chapters that time the machine, then those reading records
        print(f"[{profile}] {md.stem} ...", flush=True)
        done(*_execute_one(str(md), profile, None))
    build = root / "_build"
    build.mkdir(exist_ok=True)
    log = build / f"execution-times-{profile}.json"
    previous = json.loads(log.read_text()) if log.exists() else {}
    log.write_text(json.dumps({**previous, **times}, indent=2))
    print(f"[{profile}] total {sum(times.values()):.1f} s; times in {log}")
    if failures:
        raise RuntimeError("chapters failed:\n" + "\n".join(failures))
    return times


def _in_lanes(chapters: list[Path], lanes: int, profile: str, root: Path, done) -> None:
    """Execute ``chapters`` in ``lanes`` processes at once, the longest first, each kernel with
    its share of the cores; ``done(stem, seconds or None, error)`` as each finishes."""
    threads = max(1, (os.cpu_count() or 1) // lanes)
    print(
        f"[{profile}] {len(chapters)} chapters in {lanes} lanes of {threads} thread(s)", flush=True
    )
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(lanes, mp_context=ctx) as pool:
        jobs = [
            pool.submit(_execute_one, str(md), profile, threads)
            for md in _longest_first(chapters, root, profile)
        ]
        for job in as_completed(jobs):
            done(*job.result())


def write_notebooks(out_dir: Path, root: Path = ROOT) -> list[Path]:
    """Plain, unexecuted .ipynb versions of the chapters for Jupyter and Colab users."""
    import jupytext
    import nbformat

    out_dir.mkdir(parents=True, exist_ok=True)
    note = nbformat.v4.new_markdown_cell(
        "This notebook is generated from `book/{stem}.md` of gated-attention. It needs the "
        "package: run it from a clone after `make install`, or on Colab install the clone first "
        "(`pip install -e .` inside it; Colab's own torch is then used)."
    )
    written = []
    for md in chapters(root):
        nb = jupytext.read(md)
        cell = nbformat.from_dict(dict(note))
        cell["source"] = cell["source"].format(stem=md.stem)
        nb.cells.insert(0, cell)
        path = out_dir / f"{md.stem}.ipynb"
        nbformat.write(nb, path)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    prog = "python book/_ext/executor.py"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("execute", help="execute chapters with papermill")
    ex.add_argument("--profile", default="quick", help="smoke, quick or paper")
    ex.add_argument("--only", nargs="*", help="chapter stems to execute (default: all)")
    nb = sub.add_parser("notebooks", help="write plain .ipynb notebooks")
    nb.add_argument("--out", default="notebooks")
    sub.add_parser("list", help="list the chapters")
    args = parser.parse_args(argv)
    try:
        if args.command == "execute":
            execute(args.profile, args.only)
        elif args.command == "notebooks":
            for path in write_notebooks(Path(args.out)):
                print(path)
        else:
            for path in chapters():
                print(path.relative_to(ROOT))
    except (ValueError, FileNotFoundError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
