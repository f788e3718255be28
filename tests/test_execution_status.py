"""How each chapter was executed: recorded by the book's executor, read back and tabled by
report.execution_status."""

from executor import record_chapter

from gated_attention.report import execution_status as es


def test_chapters_are_recorded_read_back_and_totalled(tmp_path):
    record_chapter("construction", "quick", 6.54, build=tmp_path)
    record_chapter("beyond", "quick", 125.0, build=tmp_path)
    record_chapter("construction", "quick", 7.0, build=tmp_path)  # replaced, not added
    rows = es.read_status("quick", tmp_path, order=["beyond", "construction"])
    assert [r["chapter"] for r in rows] == ["beyond", "construction"]
    assert rows[1]["wall_s"] == 7.0 and rows[1]["python"]
    text = es.to_markdown(rows)
    assert text.splitlines()[0].startswith("| chapter | profile | wall time | python |")
    assert "status" not in text.splitlines()[0]  # every chapter ran: no status column
    assert "| **total** |  | 2 min 12.0 s |" in text


def test_a_failed_chapter_shows_its_status(tmp_path):
    record_chapter("construction", "smoke", None, status="failed", build=tmp_path)
    text = es.to_markdown(es.read_status("smoke", tmp_path))
    assert text.splitlines()[0].endswith("| status |")
    assert "**failed**" in text and "| ? |" in text  # no wall time: unknown
