"""The paper's claims and their status, from scorecard rows: the rules the verdicts read.

    Claim, claims     the claims of ``paper_values.json`` ("claims"), in the order of the paper,
                      fixed before the runs they score
    claim_of          the claim a row belongs to
    undecided         a row that cannot decide its claim
    status            per claim and budget, from its central rows
    with_budget_free  a recorded run's rows, with this build's rows that need no training

Statuses: reproduced (every central row measured, decided and passing); partly (some decided rows
pass, some miss or are not measured); not (every decided row misses, or one does for a claim about
every case its rows test, ``every``); "partly where decidable", "not where decidable" (the same
with some rows undecided: a decidable miss is never hidden by an undecided row); undecided (no
decided row misses, some are undecided); not scored (no central row measured); None (no row).
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources

from .scorecard import RULE_AFTER, Record, paper_values, straddles

#: how a row's note says its premise fails (its value is NaN): the claim is undecided there
PREMISE_FAILS = "premise fails"


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of the paper (paper_values.json, "claims")."""

    id: str
    claim: str  # as the paper states it
    chapter: str
    central: tuple[str, ...]
    rows: tuple[str, ...] = ()  # empty: the ids that start with "<id>."
    paper_budget: dict | None = None  # {"steps", "T", "note"}: the paper's training budget
    ours: str = ""  # a finding of ours beyond the paper, never the paper's claim
    beyond: bool = False  # the whole claim is ours (beyond the paper), not the paper's
    every: bool = False  # a claim about every case its rows test: one decided miss refutes it

    @property
    def heading(self) -> str:
        """How the claim is introduced: the paper's, or ours."""
        return "Ours, beyond the paper" if self.beyond else "The paper"

    def has(self, record_id: str) -> bool:
        if self.rows:
            return record_id in self.rows
        return record_id.startswith(self.id + ".")


def claims() -> list[Claim]:
    """The claims of paper_values.json, in file order."""
    text = resources.files("gated_attention.report").joinpath("paper_values.json").read_text()
    return [
        Claim(**c | {"central": tuple(c["central"]), "rows": tuple(c.get("rows", ()))})
        for c in json.loads(text)["claims"]
    ]


def claim_of(record_id: str) -> Claim | None:
    """The claim a row belongs to (explicit rows first, then the id prefix)."""
    all_claims = claims()
    explicit = [c for c in all_claims if record_id in c.rows]
    by_prefix = [c for c in all_claims if not c.rows and c.has(record_id)]
    return next(iter(explicit + by_prefix), None)


def rows_of(claim: Claim, records: list[Record]) -> list[Record]:
    return [r for r in records if claim.has(r.id)]


def premise_fails(r: Record) -> bool:
    """A part of the row's note ("; "-separated, after what ``scorecard.record`` puts first)
    starts with ``PREMISE_FAILS``."""
    return any(part.startswith(PREMISE_FAILS) for part in r.note.split("; "))


def rule_after(r: Record) -> bool:
    """The row's analysis rule was set after its run (``scorecard.RULE_AFTER``), and the rule
    in force then was not shown to give the same status (``scorecard.SAME_BEFORE``)."""
    parts = r.note.split("; ")
    same = len(parts) > 1 and parts[1].startswith("the rule in force then gives")
    return parts[0] == RULE_AFTER and not same


def undecided(r: Record) -> bool:
    """The row cannot decide its claim: its premise fails, its rule came after its run, or its
    interval over seeds straddles its criterion's threshold (the seeds cannot decide it)."""
    return premise_fails(r) or rule_after(r) or straddles(r) is not None


def status(claim: Claim, records: list[Record]) -> str | None:
    """The claim's status from ``records`` of one budget (see the module docstring)."""
    rows = rows_of(claim, records)
    if not rows:
        return None
    by_id = {r.id: r for r in rows}
    central = [by_id[i] for i in claim.central if i in by_id]
    if not central:
        return "not scored"
    decided = [r for r in central if not undecided(r)]
    open_rows = len(decided) < len(central)
    passes = sum(r.status == "pass" for r in decided)
    misses = len(decided) - passes
    if not misses:
        if open_rows:
            return "undecided"
        return "reproduced" if passes == len(claim.central) else "partly"
    where = " where decidable" if open_rows else ""
    return ("partly" if passes and not claim.every else "not") + where


def budget_free(r: Record) -> bool:
    """A row that needs no training (paper_values.json: budget "exact"): it counts at every
    budget, a recorded run's included."""
    return paper_values().get(r.id, {}).get("budget") == "exact"


def with_budget_free(run_rows: list[Record], build: list[Record]) -> list[Record]:
    """A recorded run's rows, with this build's budget-free rows of ids the run lacks."""
    have = {r.id for r in run_rows}
    return run_rows + [r for r in build if budget_free(r) and r.id not in have]
