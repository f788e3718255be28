"""The budget a scorecard row was trained with, as text, against the paper's budget, and back.

    budget   steps, the share of the paper's steps, T against the paper's, seeds (a row's text)
    _size    steps x T read back from such a text (0 for a row that needs no training)

``verdict`` re-exports ``budget``: the chapters call ``verdict.budget``.
"""

from __future__ import annotations

import json
import re
from importlib import resources

__all__ = ["budget"]


def _claims() -> dict[str, dict]:
    """The claims of paper_values.json by id (their paper budget and whether they are ours)."""
    text = resources.files("gated_attention.report").joinpath("paper_values.json").read_text()
    return {c["id"]: c for c in json.loads(text)["claims"]}


def budget(claim_id: str, *, steps: int, T: int | None = None, seeds: int | None = None) -> str:
    """What a row of ``claim_id`` was trained with, against the paper's budget.

    >>> budget("fig2", steps=10_000, T=8, seeds=5)
    "10,000 steps, 1% of the paper's 1,000,000; T = 8, paper 32; 5 seeds"
    """
    claim = _claims().get(claim_id)
    if claim is None:
        raise KeyError(f"unknown claim {claim_id!r}; the claims are listed in paper_values.json")
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
    paper = claim.get("paper_budget") or {}
    parts = [f"{steps:,} steps"]
    if claim.get("beyond"):
        pass  # a claim of ours: there is no paper budget to compare with
    elif paper.get("steps"):
        parts[0] += f", {_percent(steps / paper['steps'])} of the paper's {paper['steps']:,}"
    else:
        parts[0] += " (the paper gives no step count)"
    if T is not None:
        same = paper.get("T") in (None, T)
        parts.append(f"T = {T}" + ("" if same else f", paper {paper['T']}"))
    if seeds is not None:
        parts.append(f"{seeds} seed{'s' if seeds != 1 else ''}")
    return "; ".join(parts)


def _percent(x: float) -> str:
    """0.01 -> '1%', 0.003 -> '0.3%', 1.0 -> '100%' (two significant digits below 10%)."""
    p = 100 * x
    return f"{p:.0f}%" if p >= 10 else f"{p:.2g}%"


def _size(budget_text: str) -> int:
    """Steps x T of a ``budget`` text ("120,000 steps, ...; T = 8, paper 32; 5 seeds"); 0 when
    it names no steps (an exact row)."""
    m = re.match(r"([\d,]+) steps", budget_text or "")
    if m is None:
        return 0
    t = re.search(r"\bT = (\d+)", budget_text)
    return int(m.group(1).replace(",", "")) * (int(t.group(1)) if t else 1)
