"""The scorecard as a reader meets it: rows grouped by the paper's claims, both budgets.

``scorecard`` scores and stores rows; this module lays them out for the book (the scorecard page
and the introduction's summary):

    CLAIMS        id prefix -> (claim, chapter): the paper's claims in the order of the paper
    grouped       one small table per claim: what is measured, the paper's value, this build's
                  value and, where a recorded paper-budget run exists, its value, each with a
                  pass / miss mark; ids stay out of the way (the hover title of the mark)
    tally         passes and misses of each budget; "report" rows (the paper gives nothing
                  comparable) are counted apart, never as passes
    claim_status  per claim: reproduced, partly or not, from the scored rows of both budgets
"""

from __future__ import annotations

import dataclasses
import html

from .scorecard import Record, _fmt

__all__ = ["CLAIMS", "Tally", "tally", "claim_status", "grouped_html", "summary_html"]

#: id prefix -> (the claim, in a few words; the chapter that tests it)
CLAIMS: dict[str, tuple[str, str]] = {
    "construction": (
        "A gated RNN implements linear self-attention exactly (Sec. 3)",
        "construction",
    ),
    "fig2": (
        "Gradient descent finds the construction: 14 = 10 + 4 neurons (Fig. 2)",
        "teacher_identification",
    ),
    "table1": (
        "The trained student reads key-values and queries like attention (Table 1)",
        "teacher_identification",
    ),
    "fig3a": (
        "About twice the construction's neurons are needed, d = 4 (Fig. 3A)",
        "how_many_neurons",
    ),
    "fig3b": (
        "About twice the construction's neurons are needed, low rank (Fig. 3B)",
        "how_many_neurons",
    ),
    "appD2": ("One step of GD with the optimal rate and its loss (App. D.2)", "gradient_descent"),
    "sec5": ("RNNs trained in context reach the GD loss (Sec. 5.2)", "rnns_learn_gd"),
    "table2": ("...and implement exactly one step of GD (Table 2)", "rnns_learn_gd"),
    "fig3c": ("...with about twice the minimal neurons (Fig. 3C)", "rnns_learn_gd"),
    "table3": (
        "LRU, Mamba and GRU can implement attention (Table 3, App. B)",
        "which_rnns_can_be_attention",
    ),
    "table4": ("LSTM can, only approximately (Table 4, App. B.3)", "which_rnns_can_be_attention"),
    "fig4a": ("Which RNNs learn attention from a teacher (Fig. 4A)", "which_rnns_learn_attention"),
    "fig4b": ("Which RNNs learn in context (Fig. 4B)", "other_rnns_in_context"),
    "appD3": (
        "Associative recall: side gating learns attention (App. D.3, Fig. 7)",
        "associative_recall",
    ),
    "beyond": (
        "Ours, beyond the paper: d(d+1)/2 output neurons; lam < 1 costs O(T (1 - lam))",
        "beyond",
    ),
}


def _claim(record_id: str) -> str:
    return record_id.split(".", 1)[0]


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


def claim_status(quick: list[Record], recorded: list[Record]) -> dict[str, str]:
    """Per claim prefix: "reproduced" (every scored row of every budget passes), "not" (none
    passes) or "partly"; claims without rows are left out."""
    rows: dict[str, list[str]] = {}
    for r in [*quick, *recorded]:
        if r.criterion != "report":
            rows.setdefault(_claim(r.id), []).append(r.status)
    out = {}
    for claim, statuses in rows.items():
        passes = sum(s == "pass" for s in statuses)
        out[claim] = "reproduced" if passes == len(statuses) else "not" if passes == 0 else "partly"
    return out


def _mark(r: Record | None) -> str:
    if r is None:
        return "<td class='sc-none'>&ndash;</td>"
    value = html.escape(_fmt(r.ours))
    if r.criterion == "report":
        sign, cls = "&#9675;", "sc-report"  # a hollow circle: shown, not scored
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
    ".sc td.sc-pass{color:#1a7f37}"
    ".sc td.sc-miss{color:#c0392b;font-weight:bold}.sc td.sc-report{color:#666}"
    ".sc col.what{width:42%}.sc small{color:#666}</style>"
)


def grouped_html(quick: list[Record], recorded: list[Record], build_profile: str) -> str:
    """One table per claim (see the module docstring), as HTML that wraps within a column."""
    by_id = {r.id: r for r in recorded}
    parts = [_STYLE, "<div class='sc'>"]
    seen = []
    for r in quick:
        if _claim(r.id) not in seen:
            seen.append(_claim(r.id))
    extra = [_claim(r.id) for r in recorded if _claim(r.id) not in seen]
    for claim in [*seen, *dict.fromkeys(extra)]:
        title, chapter = CLAIMS.get(claim, (claim, ""))
        link = f" <a href='{chapter}.html'>&rarr; chapter</a>" if chapter else ""
        parts.append(f"<h3>{html.escape(title)}{link}</h3>")
        parts.append(
            "<table><colgroup><col class='what'><col><col><col></colgroup><tr><th>measured"
            f"</th><th>paper</th><th>{html.escape(build_profile)}</th><th>paper budget"
            "</th></tr>"
        )
        ids = [r.id for r in quick if _claim(r.id) == claim]
        ids += [i for i in by_id if _claim(i) == claim and i not in ids]
        quick_by_id = {r.id: r for r in quick}
        for i in ids:
            r = quick_by_id.get(i) or by_id[i]
            what = f"{html.escape(r.artefact)}<br><small>{html.escape(r.words)}</small>"
            parts.append(
                f"<tr><td>{what}</td><td>{html.escape(_fmt(r.paper))}</td>"
                f"{_mark(quick_by_id.get(i))}{_mark(by_id.get(i))}</tr>"
            )
        parts.append("</table>")
    parts.append("</div>")
    return "".join(parts)


def summary_html(quick: list[Record], recorded: list[Record], build_profile: str) -> str:
    """The introduction's first table: one row a claim, its chapter, and its status."""
    status = claim_status(quick, [])
    status_rec = claim_status([], recorded)
    words = {"reproduced": "&#10003; reproduced", "partly": "&#9680; partly", "not": "&#10007; not"}
    rows = [
        _STYLE,
        "<div class='sc'><table><colgroup><col class='what'><col><col></colgroup>",
        f"<tr><th>the paper's claim</th><th>{html.escape(build_profile)} build</th>"
        "<th>paper budget (recorded)</th></tr>",
    ]
    for claim, (title, chapter) in CLAIMS.items():
        if claim not in status and claim not in status_rec:
            continue
        rows.append(
            f"<tr><td><a href='{chapter}.html'>{html.escape(title)}</a></td>"
            f"<td>{words.get(status.get(claim), '&ndash;')}</td>"
            f"<td>{words.get(status_rec.get(claim), '&ndash;')}</td></tr>"
        )
    rows.append("</table></div>")
    return "".join(rows)
