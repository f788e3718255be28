"""Verdicts generated from scorecard rows: what reproduced, at which budget.

A chapter's verdict block and the introduction's claim table come from the rows alone (never
from prose), so they cannot drift from the numbers. The claims, their central rows and the
paper's budget are data in ``paper_values.json`` ("claims"), fixed before the runs they score.

    claims, status  the claims and their status from their central rows (``claims``)
    budget      a row's budget text: steps, the share of the paper's steps x T, seeds
    sentence    a claim's numbers at one budget, in a chapter that does not state it
    moved       how a claim's rows moved from this build to a recorded run (a longer budget)
    largest     the recorded run of a claim with the largest budget (steps x T)
    block       the verdict block of a chapter (markdown)
    glue_block  glue the block of the rows this kernel recorded (myst-nb), shown at the top
"""

from __future__ import annotations

from .budget_text import budget, budget_size
from .claims import (
    PREMISE_FAILS,
    Claim,
    budget_free,
    claim_of,
    claims,
    premise_fails,
    rows_of,
    rule_after,
    status,
    undecided,
    with_budget_free,
)
from .scorecard import Record, fmt, ours_cell, straddles

__all__ = [
    "Claim",
    "claims",
    "claim_of",
    "status",
    "budget",
    "sentence",
    "moved",
    "largest",
    "block",
    "glue_block",
    "STATUS_WORDS",
    "OURS_WORDS",
    "undecided",
    "with_budget_free",
    "PREMISE_FAILS",
]

#: how a status reads in a verdict
STATUS_WORDS = {
    "reproduced": "Reproduced",
    "partly": "Partly reproduced",
    "not": "Not reproduced",
    "not scored": "Not scored",
    "undecided": "Undecided at this budget",
    "partly where decidable": "Partly reproduced where decidable",
    "not where decidable": "Not reproduced where decidable",
}
#: the same for a claim of ours (nothing to reproduce: it holds or it does not)
OURS_WORDS = {
    **STATUS_WORDS,
    "reproduced": "Holds",
    "partly": "Partly holds",
    "not": "Does not hold",
    "partly where decidable": "Partly holds where decidable",
    "not where decidable": "Does not hold where decidable",
}


def _why_open(r: Record) -> str:
    if premise_fails(r):  # its first clause: "premise fails: gru learned on 1 of 3 seeds"
        return next(p for p in r.note.split("; ") if p.startswith(PREMISE_FAILS)).split(" (")[0]
    if rule_after(r):
        return "rule set after the run"
    return f"the seeds cannot decide: its interval straddles {fmt(straddles(r))}"


def _want(r: Record) -> str:
    """The criterion in a few symbols."""
    tol, ref = r.tolerance, r.reference
    # what the criterion compares against: the paper's value, or a reference of ours (labelled)
    target = fmt(r.paper) if ref is None or ref == r.paper else f"{fmt(ref)} (ours)"
    if r.criterion == "exact":
        if ref is not None and ref != r.paper:
            return f"want {target}"
        return f"paper {fmt(r.paper)}" if r.paper is not None else "exact"
    if r.criterion == "max":
        return f"want ≤ {fmt(tol)}"
    if r.criterion == "range":
        lo, hi = tol
        if lo == hi:
            return f"want {fmt(lo)}"
        return f"want ≥ {fmt(lo)}" if hi >= 1000 else f"want {fmt(lo)} to {fmt(hi)}"
    if r.criterion == "rel":
        return f"want within {fmt(100 * tol)}% of {target}"
    if r.criterion == "abs":
        return f"want within {fmt(tol)} of {target}"
    return "reported"


def _label(artefact: str) -> str:
    """'Fig. 2A: hidden neurons after pruning' -> 'hidden neurons after pruning'."""
    head, sep, tail = artefact.partition(": ")
    return tail if sep and len(head) <= 24 else artefact


def _mark(r: Record) -> str:
    if undecided(r):
        return "◌"
    return {"pass": "✓", "miss": "✗"}.get(r.status, "○")


def sentence(claim: Claim, records: list[Record], where: str, *, elsewhere: str) -> str | None:
    """One sentence of a claim that this chapter scores only some rows of: its central rows'
    numbers at one budget and the budget, no status of its own (the chapter ``elsewhere`` states
    it); None when ``records`` has no row of the claim.

    ``where``: which budget the rows are ("this build, profile quick", "the recorded run NAME").
    """
    rows = rows_of(claim, records)
    if not rows:
        return None
    by_id = {r.id: r for r in rows}
    shown = [by_id[i] for i in claim.central if i in by_id] or rows
    numbers = "; ".join(
        f"{_label(r.artefact)} {ours_cell(r)} ({_want(r)}) {_mark(r)}" for r in shown
    )
    spent = next((r.budget for r in shown if r.budget), "")
    return (
        f"Rows of this chapter, {where}" + (f" ({spent})" if spent else "") + f": {numbers}; "
        f"the claim's status over all its rows is in the chapter {elsewhere}."
    )


def moved(claim: Claim, build: list[Record], recorded: list[Record], run: str) -> str | None:
    """How the claim's trained rows measured at both budgets moved, from the smaller budget to
    the larger (steps x T; this build first on a tie): central rows first, then the others ("not
    central"), and the status change. None when no trained row of the claim is at both.

    >>> moved(claim, build, recorded, "fig3a-cpu")  # doctest: +SKIP
    'From this build to `fig3a-cpu`: loss edge 2.57 ✓ → 1 ✗ (reproduced → not).'
    """
    mine = {r.id: r for r in rows_of(claim, build) if not budget_free(r)}
    theirs = {r.id: r for r in rows_of(claim, recorded) if not budget_free(r)}
    central = [i for i in claim.central if i in mine and i in theirs]
    other = [i for i in mine if i in theirs and i not in claim.central]
    if not central and not other:
        return None
    small, large, names = mine, theirs, ("this build", f"`{run}`")
    a, b = status(claim, build), status(claim, recorded)
    if _claim_size(claim, [*theirs.values()]) < _claim_size(claim, [*mine.values()]):
        small, large, names, (a, b) = theirs, mine, names[::-1], (b, a)

    def step(i: str) -> str:
        tag = "" if i in claim.central else " (not central)"
        return (
            f"{_label(small[i].artefact)}{tag} {ours_cell(small[i])} {_mark(small[i])} → "
            f"{ours_cell(large[i])} {_mark(large[i])}"
        )

    flip = f" ({a} → {b})" if a != b else ""
    return f"From {names[0]} to {names[1]}: {'; '.join(map(step, central + other))}{flip}."


def largest(claim: Claim, recorded: list[Record]) -> tuple[str, list[Record]] | None:
    """(run, its rows of the claim) of the recorded run with the largest steps x T (the first on
    a tie; runs grouped by ``runs_by_budget`` name all their runs joined by ", "), or None."""
    groups = runs_by_budget(claim, recorded)
    if not groups:
        return None
    names, rows = max(groups, key=lambda g: max(budget_size(r.budget) for r in g[1]))
    return ", ".join(names), rows


def _decisive(claim: Claim, rows: list[Record]) -> str:
    """The central rows that decide the claim at one budget: every decided miss (never hidden),
    then up to two undecided rows, with counts of passing, undecided and unmeasured rows."""
    by_id = {r.id: r for r in rows_of(claim, rows)}
    central = [by_id[i] for i in claim.central if i in by_id]
    if not central:
        return "no central row"
    misses = [r for r in central if not undecided(r) and r.status != "pass"]
    opened = [r for r in central if undecided(r)]
    shown = (misses + opened[:2]) or central[:2]

    def said(r: Record) -> str:
        why = f", {_why_open(r)}" if undecided(r) else ""
        return f"{_label(r.artefact)} {ours_cell(r)} ({_want(r)}{why}) {_mark(r)}"

    text = "; ".join(map(said, shown))
    passed = sum(r.status == "pass" and not undecided(r) for r in central)
    total, unmeasured = len(claim.central), len(claim.central) - len(central)
    if total > len(shown):
        counts = [f"{passed} of {total} central rows pass"]
        if opened:
            counts.append(f"{len(opened)} undecided")
        if unmeasured:
            counts.append(f"{unmeasured} not measured here")
        text += " (" + ", ".join(counts) + ")"
    return text


def block(
    build: list[Record],
    recorded: list[Record],
    profile: str,
    *,
    chapter: str | None = None,
    others: list[Record] = (),
) -> str:
    """The verdict block of a chapter: per claim it has rows of (paper order; with ``chapter``,
    the chapter's own claims first), the claim, ONE headline with its status at the largest
    budget measured and the numbers that decide it, then folded every budget, how the rows moved
    (``moved``) and ours if any.

    A claim ``chapter`` scores only some rows of reads its status in the chapter stating it
    (``Claim.chapter``), executed after the others (book/_ext/executor.py), which also counts
    ``others`` (this build's rows stored by other chapters). A recorded run counts this build's
    rows that need no training (``with_budget_free``)."""
    parts = []
    have = {r.id for r in build}
    # the chapter's own claims first, then those it scores some rows of (paper order in each)
    for claim in sorted(claims(), key=lambda c: chapter is not None and c.chapter != chapter):
        if not rows_of(claim, build) and not rows_of(claim, recorded):
            continue
        if chapter not in (None, claim.chapter):
            parts.append(_elsewhere_part(claim, build, recorded, profile))
            continue
        own = build
        if chapter == claim.chapter:
            own = build + [r for r in rows_of(claim, list(others)) if r.id not in have]
        parts.append(_claim_part(claim, own, build, recorded, profile))
    if not parts:
        return ""
    head = "````{admonition} Verdict, generated from the scorecard rows below\n:class: note\n"
    return head + "\n\n".join(parts) + "\n````"


def _elsewhere_part(claim: Claim, build: list[Record], recorded: list[Record], profile: str) -> str:
    """A claim stated in another chapter (``Claim.chapter``): one line per budget, no status of
    its own."""
    said = [sentence(claim, build, f"this build, profile {profile}", elsewhere=claim.chapter)]
    for names, run_rows in runs_by_budget(claim, recorded):
        label = "the recorded run " + ", ".join(f"`{n}`" for n in names)
        said.append(sentence(claim, run_rows, label, elsewhere=claim.chapter))
    return f"**{claim.heading}:** {claim.claim}.\n\n" + "\n".join(
        f"- {t}" for t in said if t is not None
    )


def _budgets(
    claim: Claim, own: list[Record], recorded: list[Record], profile: str
) -> list[tuple[str, list[Record], float]]:
    """(label, rows, size) of every budget of the claim: this build, then each recorded run."""
    budgets = []
    if rows_of(claim, own):
        spent = spent_on(claim, own)
        label = f"this build ({profile})" + (f": {spent}" if spent else "")
        budgets.append((label, own, _claim_size(claim, own)))
    for names, run_rows in runs_by_budget(claim, recorded):
        rows = with_budget_free(run_rows, own)
        spent = spent_on(claim, run_rows)
        label = ", ".join(f"`{n}`" for n in names) + (f": {spent}" if spent else "")
        budgets.append((label, rows, _claim_size(claim, rows)))
    return budgets


def _claim_part(
    claim: Claim, own: list[Record], build: list[Record], recorded: list[Record], profile: str
) -> str:
    """A claim the chapter states: its headline at the largest budget, then folded every
    budget and how the rows moved, and ours if any (``block``)."""
    budgets = _budgets(claim, own, recorded, profile)
    top = max(budgets, key=lambda b: b[2])  # the first of the largest on a tie
    words = OURS_WORDS if claim.beyond else STATUS_WORDS
    st = status(claim, top[1])
    where = "the largest budget measured, " if len(budgets) > 1 else ""
    word = words[st].removesuffix(" at this budget")  # the budget follows
    lines = [f"**{word}** at {where}{top[0]}. Deciding: {_decisive(claim, top[1])}."]
    if st == "undecided":  # a smaller budget whose rows decide is not hidden behind it
        decided = [b for b in budgets if status(claim, b[1]) not in ("undecided", "not scored")]
        if decided:
            label, rows, _ = max(decided, key=lambda b: b[2])
            lines.append(
                f"Where rows decide, at {label}: **{words[status(claim, rows)]}**. "
                f"Deciding: {_decisive(claim, rows)}."
            )
    folded = []
    if len(budgets) > 1:  # a list, not a table: it wraps within any column
        folded.append(
            "\n".join(
                f"- {label}: **{words[status(claim, rows)]}**; {_decisive(claim, rows)}."
                for label, rows, _ in budgets
            )
        )
    biggest = largest(claim, recorded)
    if biggest and rows_of(claim, build):
        change = moved(claim, build, with_budget_free(biggest[1], own), biggest[0])
        if change:
            folded.append(change)
    if folded:
        title = f"Every budget ({len(budgets)})" if len(budgets) > 1 else "How the rows moved"
        lines.append(f":::{{dropdown}} {title}\n" + "\n\n".join(folded) + "\n:::")
    if claim.ours:
        lines.append(f"*Ours, beyond the paper:* {claim.ours}.")
    return f"**{claim.heading}:** {claim.claim}.\n\n" + "\n\n".join(lines)


def runs_by_budget(claim: Claim, recorded: list[Record]) -> list[tuple[list[str], list]]:
    """The recorded runs of the claim, as (names, rows): runs at one budget text that score
    different rows of it are one budget (one experiment's variants); a run repeating a row of
    another stays apart."""
    groups: list[tuple[list[str], list]] = []
    for run in dict.fromkeys(r.run for r in recorded if claim.has(r.id)):
        rows = [r for r in rows_of(claim, recorded) if r.run == run]
        spent, ids = spent_on(claim, rows), {r.id for r in rows}
        for names, have in groups:
            if spent and spent_on(claim, have) == spent and not ids & {r.id for r in have}:
                names.append(run)
                have.extend(rows)
                break
        else:
            groups.append(([run], list(rows)))
    return groups


def spent_on(claim: Claim, rows: list[Record]) -> str:
    """The budget text of the claim's central rows (they decide it), else of any of its rows."""
    mine = rows_of(claim, rows)
    central = [r for r in mine if r.id in claim.central and r.budget]
    return next((r.budget for r in central + mine if r.budget), "")


def _claim_size(claim: Claim, rows: list[Record]) -> int:
    """Steps x T of the trained rows of the claim (0: only rows that need no training)."""
    return max((budget_size(r.budget) for r in rows_of(claim, rows)), default=0)


def glue_block(profile: str, *, chapter: str | None = None):
    """Glue ``block`` of the rows this kernel recorded (``scorecard.session_records``) under
    "verdict" and return its text; the chapter shows it at its top with ``{glue:md}`` (myst-nb
    reads every glued output before it renders the page). ValueError when there are no rows."""
    from IPython.display import Markdown
    from myst_nb import glue

    from .scorecard import collect, session_records

    rows = session_records()
    build = [r for r in rows if not r.run]
    recorded = [r for r in rows if r.run]
    others = collect(profile) if chapter is not None else []
    text = block(build, recorded, profile, chapter=chapter, others=others)
    if not text:
        raise ValueError("this chapter recorded no scorecard row: there is no verdict to show")
    glue("verdict", Markdown(text), display=False)
    return text
