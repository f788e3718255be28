"""The scorecard as a reader meets it: rows grouped by the paper's claims, both budgets (the
scorecard page and the introduction's summary).

    grouped_html  one small table per claim: what is measured, the paper's value (and a reference
                  of ours, labelled), this build's and the recorded runs' values, each with a
                  pass / miss mark (the row's id in the mark's hover title)
    summary_html  one row a claim: its status in this build and at the largest recorded budget
    tally         passes and misses; "report" rows (nothing comparable) apart, never as passes
"""

from __future__ import annotations

import dataclasses
import html

from .scorecard import EXACT_BUDGET, Record, ours_cell, paper_cell
from .verdict import (
    STATUS_WORDS,
    Claim,
    claim_of,
    claims,
    largest,
    spent_on,
    status,
    undecided,
    with_budget_free,
)


def _claim(record_id: str) -> str:
    c = claim_of(record_id)
    return c.id if c else record_id.split(".", 1)[0]


@dataclasses.dataclass(frozen=True)
class Tally:
    """Scored rows of one budget: passes, misses, and report rows (not counted as passes)."""

    passed: int
    missed: int
    reported: int

    @property
    def scored(self) -> int:
        return self.passed + self.missed


def tally(records: list[Record]) -> Tally:
    """Count passes and misses, with "report" rows apart (see the module docstring)."""
    scored = [r for r in records if r.criterion != "report"]
    return Tally(
        passed=sum(r.status == "pass" for r in scored),
        missed=sum(r.status != "pass" for r in scored),
        reported=len(records) - len(scored),
    )


def _mark(r: Record | None, exact: bool = False) -> str:
    if r is None:
        text = EXACT_BUDGET if exact else "&ndash;"
        return f"<td class='sc-none'>{text}</td>"
    value = html.escape(ours_cell(r))
    if r.criterion == "report":
        sign, cls = "&#9675;", "sc-report"  # a hollow circle: shown, not scored
    elif undecided(r):
        sign, cls = "&#9676;", "sc-report"  # a dotted circle: its premise or rule left it open
    elif r.status == "pass":
        sign, cls = "&#10003;", "sc-pass"
    else:
        sign, cls = "&#10007;", "sc-miss"
    title = html.escape(f"{r.id}: {r.note}" if r.note else r.id, quote=True)
    return f"<td class='{cls}' title='{title}'>{value} {sign}</td>"


_STYLE = (
    "<style>.sc table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:0.9em}"
    ".sc td,.sc th{border-bottom:1px solid #ddd;padding:2px 4px;vertical-align:top;"
    "overflow-wrap:anywhere}.sc th{text-align:left;overflow-wrap:normal;word-break:keep-all}"
    ".sc .sc-pass{color:#1a7f37}"
    ".sc .sc-miss{color:#c0392b;font-weight:bold}.sc .sc-report{color:#666}"
    ".sc col.what{width:42%}.sc col.st{width:9.5em}.sc small{color:#666}"
    ".sc .stw{white-space:nowrap}</style>"
)


def _recorded_cell(rows: list[Record], exact: bool) -> str:
    """Every recorded run's value of one row, each with its budget in small print."""
    if not rows:
        return _mark(None, exact)
    items = []
    for r in rows:
        cell = _mark(r)  # "<td class='..' title='..'>value sign</td>"
        inner = cell.removeprefix("<td").removesuffix("</td>")
        budget = html.escape(r.budget or r.run)
        items.append(f"<span{inner}<br><small>{budget}</small></span>")
    return "<td>" + "<br>".join(items) + "</td>"


def grouped_html(quick: list[Record], recorded: list[Record], build_profile: str) -> str:
    """One table per claim (see the module docstring), as HTML that wraps within a column."""
    by_id: dict[str, list[Record]] = {}
    for r in recorded:
        by_id.setdefault(r.id, []).append(r)
    titles: dict[str, Claim] = {c.id: c for c in claims()}
    parts = [_STYLE, "<div class='sc'>"]
    for claim in dict.fromkeys(_claim(r.id) for r in [*quick, *recorded]):
        c = titles.get(claim)
        title, chapter = (c.claim, c.chapter) if c else (claim, "")
        link = f" <a href='{chapter}.html'>&rarr; chapter</a>" if chapter else ""
        parts.append(f"<h3>{html.escape(title)}{link}</h3>")
        parts.append(
            "<table><colgroup><col class='what'><col><col><col></colgroup><tr><th>measured"
            f"</th><th>paper</th><th>{html.escape(build_profile)}</th><th>recorded runs"
            "</th></tr>"
        )
        ids = [r.id for r in quick if _claim(r.id) == claim]
        ids += [i for i in by_id if _claim(i) == claim and i not in ids]
        quick_by_id = {r.id: r for r in quick}
        for i in ids:
            r = quick_by_id.get(i) or by_id[i][0]
            what = f"{html.escape(r.artefact)}<br><small>{html.escape(r.words)}</small>"
            parts.append(
                f"<tr><td>{what}</td><td>{html.escape(paper_cell(r))}</td>"
                f"{_mark(quick_by_id.get(i))}"
                f"{_recorded_cell(by_id.get(i, []), exact=r.budget == EXACT_BUDGET)}</tr>"
            )
        parts.append("</table>")
    parts.append("</div>")
    return "".join(parts)


def summary_html(quick: list[Record], recorded: list[Record], build_profile: str) -> str:
    """The introduction's first table: one row a claim (as the paper states it, and ours where
    the companion found more), its status in this build and in the recorded runs."""
    words = {  # a status never breaks inside a word, however narrow its column
        "reproduced": "<span class='stw'>&#10003; reproduced</span>",
        "partly": "<span class='stw'>&#9680; partly</span>",
        "not": "<span class='stw'>&#10007; not</span>",
        "not scored": "<span class='stw'>&#9675; not scored</span>",
        "undecided": "<span class='stw'>&#9676; undecided</span> at this budget",
        "partly where decidable": "<span class='stw'>&#9680; partly</span> where decidable",
        "not where decidable": "<span class='stw'>&#10007; not</span> where decidable",
    }
    # a claim of ours holds or does not: nothing of the paper's to reproduce
    ours_words = {
        **words,
        "reproduced": "<span class='stw'>&#10003; holds</span>",
        "partly": "<span class='stw'>&#9680; partly holds</span>",
        "not": "<span class='stw'>&#10007; does not hold</span>",
        "partly where decidable": "<span class='stw'>&#9680; partly holds</span> where decidable",
        "not where decidable": "<span class='stw'>&#10007; does not hold</span> where decidable",
    }
    assert set(words) == set(STATUS_WORDS) == set(ours_words)
    rows = [
        _STYLE,
        "<div class='sc'><table><colgroup><col class='what'><col class='st'><col></colgroup>",
        f"<tr><th>the paper's claim</th><th>{html.escape(build_profile)} build</th>"
        "<th>the largest recorded budget</th></tr>",
    ]
    for c in claims():
        top = largest(c, recorded)  # the status at the largest budget recorded
        if top:  # with this build's rows that need no training, which count at every budget
            top = (top[0], with_budget_free(top[1], quick))
        st, st_rec = status(c, quick), (status(c, top[1]) if top else None)
        if st is None and st_rec is None:
            continue
        exact = all(r.budget == EXACT_BUDGET for r in quick if c.has(r.id))
        ours = f"<br><small>ours: {html.escape(c.ours)}</small>" if c.ours else ""
        said = ours_words if c.beyond else words
        rec_cell = said.get(st_rec, EXACT_BUDGET if exact and st else "&ndash;")
        if top:
            spent = spent_on(c, [r for r in top[1] if r.run])
            rec_cell += f"<br><small>{html.escape(top[0])}: {html.escape(spent)}</small>"
        label = f"{c.heading}: {c.claim}" if c.beyond else c.claim
        rows.append(
            f"<tr><td><a href='{c.chapter}.html'>{html.escape(label)}</a>{ours}</td>"
            f"<td>{said.get(st, '&ndash;')}</td><td>{rec_cell}</td></tr>"
        )
    rows.append("</table></div>")
    return "".join(rows)
