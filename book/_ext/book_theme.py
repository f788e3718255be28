"""A small Sphinx extension for the book: launch buttons that open the chapter *sources*.

sphinx-book-theme points its Binder button at the executed ``book/<chapter>.ipynb``, a build
output not in the repository; this extension points it at ``book/<chapter>.md``, which Binder
opens as a notebook through jupytext (``.binder/``). It also adds the book's stylesheet
(``static/companion.css``: outputs wrap within the column).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["setup", "retarget"]


def retarget(buttons: list, sources: set[str]) -> None:
    """Rewrite ``.ipynb`` launch URLs whose ``.md`` source exists (in place, nested buttons too)."""
    for button in buttons:
        if isinstance(button, dict):
            url = button.get("url")
            if isinstance(url, str) and ".ipynb" in url and "mybinder" in url:
                path = url.rsplit("/", 1)[-1]
                stem = path.split(".ipynb")[0]
                if stem in sources:
                    button["url"] = url.replace(f"{stem}.ipynb", f"{stem}.md")
            retarget(button.get("buttons", []), sources)


def _add_static(app) -> None:
    """Serve static/ (the stylesheet) with the book's own static files."""
    app.config.html_static_path.append(str(STATIC))


def _on_page(app, pagename, templatename, context, doctree) -> None:
    src = Path(app.srcdir) / f"{pagename}.md"
    if src.exists() and "header_buttons" in context:
        retarget(context["header_buttons"], {Path(pagename).name})


STATIC = Path(__file__).resolve().parent / "static"


def setup(app):
    # sphinx-book-theme adds its launch buttons at priority 501; run after it.
    app.connect("html-page-context", _on_page, priority=502)
    app.connect("builder-inited", _add_static)
    app.add_css_file("companion.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
