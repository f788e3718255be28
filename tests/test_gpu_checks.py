"""The first call on a lent GPU (lab.gpu_checks): its steps in order within the budget, a
failing or stopped step not stopping the next, and what each did written as it goes."""

import json
import sys

from lab import gpu_checks as gc


def _py(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


def test_the_steps_run_in_order_within_the_budget_and_say_what_each_did(tmp_path):
    todo = [
        gc.Step("fails", _py("import sys; print('broken'); sys.exit(3)"), 30.0),
        gc.Step("slow", _py("import time; time.sleep(60)"), 2.0),
        gc.Step("rest", _py("import time; time.sleep(60)"), 30.0),
        gc.Step("late", _py("pass"), 30.0),
    ]
    done = gc.run_steps(todo, tmp_path, budget_s=8.0, min_s=1.0)
    assert [d["step"] for d in done] == ["fails", "slow", "rest", "late"]
    assert done[0]["rc"] == 3 and "broken" in (tmp_path / "fails.log").read_text()
    assert done[1]["rc"] == "stopped after 2 s" and done[1]["seconds"] < 5
    assert done[2]["rc"].startswith("stopped after") and done[2]["seconds"] < 8
    assert done[3] == {"step": "late", "skipped": "the budget was spent before it"}
    assert json.loads((tmp_path / "call.json").read_text()) == done


def test_a_step_is_told_its_share_less_ten_seconds(tmp_path):
    todo = [gc.Step("given", _py("import sys; print(sys.argv[1])") + ("{budget}",), 30.0)]
    assert gc.run_steps(todo, tmp_path, budget_s=100.0)[0]["rc"] == 0
    assert (tmp_path / "given.log").read_text().strip() == "20"


def test_the_call_checks_then_times_then_benches_into_its_folder(tmp_path):
    todo = gc.steps(tmp_path, "cuda")
    assert [s.name for s in todo] == ["cuda-tests", "step-times", "bench"]
    times = " ".join(todo[1].argv)
    assert "--missing h200" in times and "--busy" in times and "{budget}" in times
    assert str(tmp_path / "step-times.json") in times
    assert "tests/test_cuda.py" in todo[0].argv
    assert sum(s.cap_s for s in todo) <= 600  # one call of the lent machine
