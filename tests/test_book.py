"""The book's executor and Sphinx extension: chapters from _toc.yml, clear errors, Binder links."""

import executor
import pytest
from book_theme import retarget

from gated_attention.experiments import check_profile


def test_chapters_follow_the_toc_and_exist():
    paths = executor.chapters()
    stems = [p.stem for p in paths]
    assert stems[0] == "intro" and stems[-1] == "scorecard"  # the scorecard collects, so last
    assert all(p.exists() and p.suffix == ".md" for p in paths)


def test_every_chapter_declares_a_profile_parameter():
    for path in executor.chapters():
        text = path.read_text()
        assert ":tags: [parameters, remove-cell]" in text, path.name
        assert 'profile = "quick"' in text, path.name


def test_unknown_profile_and_chapter_are_named():
    with pytest.raises(ValueError, match="unknown profile 'fast'.*smoke, quick, paper"):
        check_profile("fast")
    assert executor.main(["execute", "--profile", "fast"]) == 1
    assert executor.main(["execute", "--profile", "smoke", "--only", "no_such_chapter"]) == 1


def test_binder_buttons_open_the_md_source():
    buttons = [
        {
            "type": "group",
            "buttons": [
                {"url": "https://mybinder.org/v2/gh/o/r/main?urlpath=lab/tree/book/intro.ipynb"},
                {"url": "https://example.org/book/intro.ipynb"},
            ],
        }
    ]
    retarget(buttons, {"intro"})
    assert buttons[0]["buttons"][0]["url"].endswith("lab/tree/book/intro.md")
    assert buttons[0]["buttons"][1]["url"].endswith("intro.ipynb")  # not a Binder link


def test_notebooks_are_written(tmp_path):
    written = executor.write_notebooks(tmp_path)
    assert {p.stem for p in written} == {p.stem for p in executor.chapters()}
    assert all(p.read_text().startswith("{") for p in written)


@pytest.mark.slow
def test_a_full_run_starts_from_no_scorecard_records(tmp_path, monkeypatch):
    """A chapter that fails cannot hide behind a record an earlier build left: a full run removes
    the profile's records first, and names the failing chapter."""
    monkeypatch.setenv("GATED_ATTENTION_BUILD", str(tmp_path / "build"))
    stale = tmp_path / "build" / "scorecard" / "smoke" / "fig4a.gated_below_gru.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    (tmp_path / "book").mkdir()
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/broken\n")
    header = (executor.ROOT / "book" / "intro.md").read_text().split("---")[1]  # the chapters' own
    header = f"---{header}---\n"
    cell = "```{code-cell} ipython3\nraise RuntimeError('this chapter fails')\n```\n"
    (tmp_path / "book" / "broken.md").write_text(header + cell)
    with pytest.raises(RuntimeError, match="broken"):
        executor.execute("smoke", root=tmp_path)
    assert not stale.exists()


def test_the_injected_parameters_cell_is_removed_from_the_page(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("profile = 'quick'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("profile = 'smoke'", metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_code_cell("print(profile)"),
    ]
    path = tmp_path / "chapter.ipynb"
    nbformat.write(nb, path)
    executor.hide_injected_parameters(path)
    tags = [c.metadata.get("tags", []) for c in nbformat.read(path, as_version=4).cells]
    assert tags == [["parameters"], ["injected-parameters", "remove-cell"], []]


def test_a_fresh_clone_orders_the_lanes_longest_first_by_the_shipped_times(tmp_path):
    """Without a log of its own, the lanes take the chapters by the package's measured times,
    the longest first; a checkout's own log overrides them."""
    import json

    import executor

    shipped = json.loads(executor.SHIPPED_TIMES.read_text())["quick"]
    names = ("equations", "associative_recall", "beyond")
    paths = [tmp_path / f"{name}.md" for name in names]
    order = [p.stem for p in executor._longest_first(paths, tmp_path, "quick")]
    assert order == sorted(order, key=lambda s: -shipped[s])
    assert order[0] == "associative_recall"  # the longest chapter, not first in reading order
    (tmp_path / "_build").mkdir()
    (tmp_path / "_build" / "execution-times-quick.json").write_text('{"equations": 1e6}')
    assert executor._longest_first(paths, tmp_path, "quick")[0].stem == "equations"
    assert executor.chapter_times(tmp_path, "quick")["beyond"] == shipped["beyond"]
