"""Where the book's launch buttons go, and the notebooks they open on Colab.

The repository's address is set once, in ``_config.yml`` (``repository.url`` and ``.branch``);
everything here reads it from there (``repository()``).

Colab opens only ``.ipynb`` files from GitHub, and the chapters are jupytext ``.md`` files; their
executed notebooks (``book/<chapter>.ipynb``, made by ``make execute``) are build outputs. The book
workflow therefore publishes them, each with an install cell first, to the branch
``NOTEBOOKS_BRANCH`` (same paths: ``book/<chapter>.ipynb``):

    python book/_ext/launch_links.py publish OUT [--ref SHA]
                                                   write OUT/book/<chapter>.ipynb
    python book/_ext/launch_links.py branch        print the branch they go to

As a Sphinx extension (``sphinx.local_extensions`` in ``_config.yml``) this module points
sphinx-book-theme's Colab button at the published copy on ``NOTEBOOKS_BRANCH``, and switches
thebe off (jupyter-book loads sphinx-thebe on every book: its configuration script twice on each
page, a SyntaxError in every console; the Binder button opens the same chapter live instead).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

__all__ = [
    "NOTEBOOKS_BRANCH",
    "repository",
    "colab_url",
    "retarget_colab",
    "install_cell_source",
    "publish_notebooks",
    "setup",
    "main",
]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_BRANCH = "notebooks"
COLAB = "https://colab.research.google.com"
#: installed by Colab already, and kept: a second torch or numpy would replace the ones Colab's
#: torch was built with (and ask for a restart of the session)
COLAB_KEEPS = {"torch", "numpy"}


def repository(root: Path = ROOT) -> tuple[str, str]:
    """``(url, branch)`` of the repository, from ``_config.yml``."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text())
    repo = config.get("repository") or {}
    if not repo.get("url"):
        raise ValueError("_config.yml has no repository.url")
    return repo["url"].rstrip("/"), repo.get("branch") or "main"


def _org_repo(url: str) -> tuple[str, str]:
    """``("org", "repo")`` of a GitHub URL."""
    if "github.com/" not in url:
        raise ValueError(f"not a GitHub repository: {url}")
    org, repo = url.split("github.com/", 1)[1].split("/")[:2]
    return org, repo.removesuffix(".git")


def colab_url(url: str, path: str, branch: str = NOTEBOOKS_BRANCH) -> str:
    """The Colab address of the notebook at ``path`` on ``branch`` of GitHub repository ``url``."""
    org, repo = _org_repo(url)
    return f"{COLAB}/github/{org}/{repo}/blob/{branch}/{path}"


def retarget_colab(buttons: list, branch: str, notebooks_branch: str = NOTEBOOKS_BRANCH) -> None:
    """Point Colab buttons at ``notebooks_branch`` instead of ``branch`` (in place, nested too)."""
    for button in buttons:
        if not isinstance(button, dict):
            continue
        url = button.get("url")
        if isinstance(url, str) and url.startswith(f"{COLAB}/github/"):
            button["url"] = url.replace(f"/blob/{branch}/", f"/blob/{notebooks_branch}/", 1)
        retarget_colab(button.get("buttons", []), branch, notebooks_branch)


def _colab_requirements(root: Path) -> list[str]:
    """The package's pinned dependencies, but those Colab keeps (``COLAB_KEEPS``)."""
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if d.split("==")[0].strip().lower() not in COLAB_KEEPS]


def install_cell_source(root: Path = ROOT, ref: str | None = None) -> str:
    """The first cell of a published notebook: install the package at ``ref`` (default: the
    branch of ``_config.yml``), keep Colab's torch."""
    url, branch = repository(root)
    reqs = " ".join(f'"{r}"' for r in _colab_requirements(root))
    return (
        "# Colab (or any Jupyter without the package): install gated-attention from GitHub.\n"
        "# --no-deps keeps the torch and numpy already installed; the rest are the pinned ones.\n"
        "import importlib.util\n"
        "\n"
        'if importlib.util.find_spec("gated_attention") is None:\n'
        f'    %pip install -q "gated-attention @ git+{url}@{ref or branch}" --no-deps\n'
        f"    %pip install -q {reqs}\n"
    )


def _note_cell(stem: str, root: Path):
    import nbformat

    url, branch = repository(root)
    return nbformat.v4.new_markdown_cell(
        f"This is the executed chapter `book/{stem}.md` of [gated-attention]({url}) "
        f"(branch `{branch}`), published for Colab. Run the next cell first: it installs the "
        "package and keeps Colab's own torch (should Colab ask to restart the session after it, "
        "restart and run on). The outputs below are those of the book's build."
    )


def publish_notebooks(out_dir: Path, root: Path = ROOT, ref: str | None = None) -> list[Path]:
    """Copy the executed chapters ``book/<stem>.ipynb`` to ``out_dir/book/`` with an install cell
    that installs the package at ``ref`` (the commit they were executed from, in the workflow).

    Only the published copies get the cell; a chapter that was not executed is an error.
    """
    import nbformat

    from gated_attention.report.execution_status import chapters

    written = []
    install = install_cell_source(root, ref)
    for md in chapters(root):
        executed = md.with_suffix(".ipynb")
        if not executed.exists():
            raise FileNotFoundError(f"{executed} was not executed (run `make execute` first)")
        nb = nbformat.read(executed, as_version=4)
        cell = nbformat.v4.new_code_cell(install)
        cell.metadata["tags"] = ["colab-install"]
        nb.cells[:0] = [_note_cell(md.stem, root), cell]
        path = Path(out_dir) / "book" / executed.name
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
        written.append(path)
    _write_branch_readme(Path(out_dir), root, ref)
    return written


def _write_branch_readme(out_dir: Path, root: Path, ref: str | None) -> None:
    url, branch = repository(root)
    (out_dir / "README.md").write_text(
        f"# Executed notebooks of gated-attention\n\n"
        f"Written by the book workflow from `{ref or branch}` of {url} (branch `{branch}`), for "
        "the Colab buttons of the book. Do not edit: every build replaces this branch. The "
        "chapters' sources are `book/*.md` on the main branch.\n"
    )


def _disable_thebe(app, config) -> None:
    """Disconnect sphinx-thebe's event handlers and drop its stylesheet."""
    for listeners in list(app.events.listeners.values()):
        for listener in list(listeners):
            if getattr(listener.handler, "__module__", "").startswith("sphinx_thebe"):
                app.disconnect(listener.id)
    app.registry.css_files[:] = [
        (name, attrs) for name, attrs in app.registry.css_files if "thebe" not in name
    ]


def _on_page(app, pagename, templatename, context, doctree) -> None:
    if "header_buttons" in context:
        branch = app.config.html_theme_options.get("repository_branch") or "main"
        retarget_colab(context["header_buttons"], branch)


def setup(app):
    app.connect("config-inited", _disable_thebe)
    # sphinx-book-theme adds its launch buttons at priority 501; run after it.
    app.connect("html-page-context", _on_page, priority=503)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python book/_ext/launch_links.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    pub = sub.add_parser("publish", help="write the executed chapters for Colab to OUT/book/")
    pub.add_argument("out")
    pub.add_argument("--ref", help="the commit or branch the install cell installs")
    sub.add_parser("branch", help="print the branch the notebooks are published to")
    args = parser.parse_args(argv)
    if args.command == "branch":
        print(NOTEBOOKS_BRANCH)
        return 0
    try:
        for path in publish_notebooks(Path(args.out), ref=args.ref):
            print(path)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
