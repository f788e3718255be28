"""Fig. 2 and Table 1 over every seed of a run: their scorecard rows from the members
(``teacher_members.MemberRow``), for ``scorecard.record(**vars(row), profile=..., budget=...)``.
``late``: id -> the note (``scorecard.RULE_AFTER``) of a row whose rule came after its run: such
a row does not decide its claim."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Mapping

from .. import analysis
from ..experiments.teacher_identification import TUNING_SEEDS
from .teacher_members import SELECTOR_SHARE, fractions, held_out_values

#: the count rows of Fig. 2A/B and the member row's attribute each reads
COUNTS = (
    ("fig2.hidden_after_pruning", "hidden"),
    ("fig2.output_after_pruning", "output"),
    ("fig2.lambda_one", "lam_one"),
    ("fig2.lambda_zero", "lam_zero"),
)


@dataclasses.dataclass(frozen=True)
class ScoreRow:
    """One scorecard row as ``record``'s keywords; the chapter adds profile, budget and run."""

    id: str
    ours: float
    seeds: int | None = None
    note: str = ""
    interval: tuple | None = None


def tuning_label(seeds) -> str:
    """'tuning seeds 0-2 (they chose lr and weight decay)' where ``seeds`` holds seeds of the
    pilots behind the learning rate and weight decay (``TUNING_SEEDS``); '' where none."""
    tuned = sorted(int(s) for s in seeds if s in TUNING_SEEDS)
    if not tuned:
        return ""
    if len(tuned) == 1:
        return f"tuning seed {tuned[0]} (seeds 0-2 chose lr and weight decay)"
    span = tuned == list(range(tuned[0], tuned[-1] + 1)) and len(tuned) > 2
    named = f"{tuned[0]}-{tuned[-1]}" if span else ", ".join(map(str, tuned))
    return f"tuning seeds {named} (they chose lr and weight decay)"


def seeds_budget(budget: Callable[..., str], steps: int, T: int, seeds) -> str:
    """``budget`` (``report.verdict.budget``) of Fig. 2 for ``seeds``, with their ``tuning_label``
    (such rows are never held out)."""
    text, label = budget("fig2", steps=steps, T=T, seeds=len(seeds)), tuning_label(seeds)
    return f"{text}; {label}" if label else text


def _row(id_, value, rows, *, late: Mapping[str, str] | None = None, note: str = "", **kw):
    """A ScoreRow over ``rows``, noted ``late[id_]``; ``tuning_label``; ``note``."""
    rule, tuning = (late or {}).get(id_, ""), tuning_label([r.seed for r in rows])
    note = "; ".join(t for t in (rule, tuning, note) if t)
    return ScoreRow(id_, value, seeds=len(rows), note=note, **kw)


def paper_counts(values: Mapping[str, Mapping]) -> dict[str, int]:
    """The paper's count of each row of COUNTS, from ``values`` (``scorecard.paper_values()``)."""
    return {id_: values[id_]["paper"] for id_, _ in COUNTS}


def paper_row(paper: Mapping[str, int]) -> dict:
    """The paper's counts (``paper_counts``) as a member-table row, None where it gives none."""
    return {
        "seed": "paper",
        "hidden": paper["fig2.hidden_after_pruning"],
        "lam_one": paper["fig2.lambda_one"],
        "lam_zero": paper["fig2.lambda_zero"],
        "between": None,
        "output": paper["fig2.output_after_pruning"],
        **dict.fromkeys(("norm_loss", "score_kv", "score_q", "learned", "merged")),
    }


def count_values(rows: list, paper: Mapping[str, int]) -> list[tuple[str, float, tuple, str]]:
    """(id, median, (min, max), note: seeds at the paper's count) per count of Fig. 2A/B."""
    if not rows:
        raise ValueError("no members")
    out = []
    for id_, attr in COUNTS:
        v = [getattr(r, attr) for r in rows]
        want = paper[id_]
        note = f"{sum(x == want for x in v)} of {len(v)} seeds at the paper's {want}"
        out.append((id_, statistics.median(v), (min(v), max(v)), note))
    return out


def count_rows(
    rows: list, paper: Mapping[str, int], *, late: Mapping[str, str] | None = None
) -> list:
    """The rows of ``count_values``: the median, its range over seeds as the interval."""
    return [
        _row(id_, v, rows, late=late, note=note, interval=span)
        for id_, v, span, note in count_values(rows, paper)
    ]


def fraction_rows(rows: list, *, late: Mapping[str, str] | None = None) -> list:
    """The fractions of ``rows`` pruned to exactly 14 = 10 + 4 and that learned the
    construction (``teacher_members.fractions``). No interval: these rows' rule predates the
    runs, and an interval would change which of them decide (``verdict.undecided``)."""
    f = fractions(rows)
    return [
        _row(id_, f[key][0] / len(rows), rows, late=late)
        for id_, key in (
            ("fig2.construction_counts_fraction", "construction_counts"),
            ("fig2.learned_fraction", "learned"),
        )
    ]


def merged_output_value(rows: list) -> tuple[float, tuple[float, float], str]:
    """App. C.2 over seeds: (share of ``rows`` with a merged group that is the construction's
    output neuron, its Wilson 95% interval, a note naming them and counting every merged group)."""
    if not rows:
        raise ValueError("no members")
    found, groups, three, low, unsearched = [], 0, 0, [], []
    for r in rows:
        m = r.rev.merged
        shares = analysis.merged_selector_shares(m, r.rev.groups.one, r.rev.groups.zero)
        groups += len(shares)
        three += sum(len(g) == 3 for g in m.groups)
        low += [f"seed {r.seed} {sh:.2g}" for sh in shares if sh < SELECTOR_SHARE]
        if any(sh >= SELECTOR_SHARE for sh in shares):
            found.append(str(r.seed))
        if not getattr(r.rev, "merge_searched", True):
            unsearched.append(str(r.seed))
    k, R, S = len(found), len(rows), sum(r.merged > 0 for r in rows)
    note = (
        f"{k} of {R} seeds ({', '.join(found) or 'none'}); {groups} groups merged "
        f"({three} of three neurons) in {S} seed{'' if S == 1 else 's'}"
    )
    if low:
        note += f"; share below {SELECTOR_SHARE:g}: {', '.join(low)}"
    if unsearched:
        note += f"; merge not searched (too many output neurons): seeds {', '.join(unsearched)}"
    return k / R, analysis.wilson_interval(k, R), note


def seed_rows(rows: list, *, late: Mapping[str, str] | None = None) -> list:
    """Table 1's medians (``held_out_values``) and App. C.2's ``merged_output_value``."""
    out = [_row(id_, value, rows, late=late) for id_, value in held_out_values(rows)]
    value, interval, note = merged_output_value(rows)
    out.append(
        _row("fig2.merged_is_output_neuron", value, rows, late=late, note=note, interval=interval)
    )
    return out


def merge_rows(rows: list, *, note: bool = False, late: Mapping[str, str] | None = None) -> list:
    """The row ``fig2.merge_found`` (``note``: name the seeds), then ``seed_rows``."""
    merged = [str(row.seed) for row in rows if row.merged]
    text = f"seeds with a merged group: {', '.join(merged) or 'none'}" if note else ""
    found = _row("fig2.merge_found", len(merged), rows, late=late, note=text)
    return [found, *seed_rows(rows, late=late)]


def first_seed_rows(
    rows: list,
    eval_loss: float,
    *,
    teacher_var: float | None = None,
    prune_tol: float | None = None,
    late: Mapping[str, str] | None = None,
) -> list:
    """Table 1's rows of the first member of ``rows``; with ``prune_tol`` (and ``teacher_var``)
    the notes say which seed, the threshold and the largest output change over the seeds."""
    first = rows[0]
    values = [
        ("table1.loss", eval_loss, ""),
        ("table1.score_kv", first.score_kv, ""),
        ("table1.score_q", first.score_q, ""),
        ("table1.poly_distance", first.rev.poly_distance, ""),
    ]
    own = ""
    if prune_tol is not None:
        change = max(row.rev.prune_change for row in rows)
        relative = f"relative to the teacher's variance: {eval_loss / teacher_var:.2g}"
        values[0] = ("table1.loss", eval_loss, relative)
        own = (
            f"seed {first.seed}, the first of {len(rows)}; pruned at {prune_tol:g} (largest "
            f"output change over the seeds {change:.2g})"
        )
    return [
        _row(id_, v, rows[:1], late=late, note="; ".join(t for t in (own, n) if t))
        for id_, v, n in values
    ]


def rung_rows(rows: list, paper: Mapping[str, int]) -> list:
    """The Fig. 2 rows of one rung of the surplus ladder, each over all its seeds."""
    return count_rows(rows, paper) + fraction_rows(rows) + merge_rows(rows)
