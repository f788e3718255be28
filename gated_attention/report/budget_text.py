"""The budget a scorecard row was trained with, as text, against the paper's budget, and back.

    budget        steps and T, their share of the paper's steps x T, seeds (a row's text)
    budget_size   steps x T read back from such a text (0 for a row that needs no training)

The share counts steps x T: 15,000 steps at T = 8 are 0.38% of the paper's 1,000,000 steps at
T = 32, not 1.5%. The chapters call ``verdict.budget`` (a re-export).
"""

from __future__ import annotations

import operator
import re

from .claims import claims


def budget(claim_id: str, *, steps: int, T: int | None = None, seeds: int | None = None) -> str:
    """What a row of ``claim_id`` was trained with, against the paper's budget (steps x T).

    ``T``: the sequence length trained at; None where the task fixes it at the paper's own T
    (Sec. 5's in-context regression, T = 12): the text then names the paper's T as the row's.

    >>> budget("fig2", steps=10_000, T=8, seeds=5)
    "10,000 steps at T = 8: 0.25% of the paper's 1,000,000 steps at T = 32 (steps x T); 5 seeds"
    >>> budget("sec5", steps=1_200)
    "1,200 steps: 0.4% of the paper's 300,000 steps at the same T = 12 (steps x T)"
    """
    claim = next((c for c in claims() if c.id == claim_id), None)
    if claim is None:
        raise KeyError(f"unknown claim {claim_id!r}; the claims are listed in paper_values.json")
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    if T is not None:
        if isinstance(T, bool) or not hasattr(T, "__index__") or operator.index(T) < 1:
            raise ValueError(f"T must be a positive integer or None, got {T!r}")
        T = operator.index(T)
    paper = {} if claim.beyond else claim.paper_budget or {}
    P, PT = paper.get("steps"), paper.get("T")
    head = f"{steps:,} steps" + ("" if T is None else f" at T = {T}")
    if claim.beyond:
        text = head  # a claim of ours: there is no paper budget to compare with
    elif not P:
        text = head + " (the paper gives no step count)"
    elif PT is None:  # the paper gives no T: the share counts steps alone
        text = f"{head}: {_percent(steps / P)} of the paper's {P:,} steps (the paper gives no T)"
    elif T is None:  # the task's T is the paper's
        text = f"{head}: {_percent(steps / P)} of the paper's {P:,} steps at the same T = {PT}"
        text += " (steps x T)"
    else:
        share = _percent(steps * T / (P * PT))
        text = f"{head}: {share} of the paper's {P:,} steps at T = {PT} (steps x T)"
    if seeds is not None:
        text += f"; {seeds} seed{'s' if seeds != 1 else ''}"
    return text


def _percent(x: float) -> str:
    """0.01 -> '1%', 0.003 -> '0.3%', 1.0 -> '100%' (two significant digits below 10%)."""
    p = 100 * x
    return f"{p:.0f}%" if p >= 10 else f"{p:.2g}%"


def budget_size(budget_text: str) -> int:
    """Steps x T of a ``budget`` text ("120,000 steps at T = 8: ..."; the first T named is the
    row's own); 0 when it names no steps (an exact row)."""
    m = re.match(r"([\d,]+) steps", budget_text or "")
    if m is None:
        return 0
    t = re.search(r"\bT = (\d+)", budget_text)
    return int(m.group(1).replace(",", "")) * (int(t.group(1)) if t else 1)
