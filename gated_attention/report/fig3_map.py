"""Fig. 3's finding as one table: the loss edge per panel and per setting of ours, with its
interval over seeds, its budget as a share of the paper's steps x T and how many students were
still learning (the sweeps: ``fig3_edges.largest``).

    EdgeRow      one row: a panel at one setting
    edge_rows    the rows, in the order of ``fig3_edges.SETTINGS``
    edge_table   the rows as a markdown table
    span         the lowest and highest n*/count of a panel
    numbers      the numbers the finding's sentence glues
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..analysis.loss_edge import CENTRAL_LEVEL
from .fig3_edges import SETTINGS, Sweep

__all__ = ["EdgeRow", "edge_rows", "edge_table", "numbers", "span"]


@dataclasses.dataclass(frozen=True)
class EdgeRow:
    """One row of the finding's table: a panel at one of our settings, its budget, n*/count at
    the central level with its bootstrap interval over seeds, and students still learning."""

    panel: str
    setting: str
    run: str
    share: float  # steps x T over the paper's
    seeds: int
    sizes: tuple[int, ...]
    ratio: float  # NaN: no edge among the sizes
    interval: tuple[float | None, float | None]
    still: int | None


def edge_rows(runs: dict[str, Sweep]) -> list[EdgeRow]:
    """The finding's rows, in the order of ``SETTINGS``, from ``largest()``'s sweeps."""
    out = []
    for key in SETTINGS:
        s = runs.get(key)
        if s is None:
            continue
        out.append(
            EdgeRow(
                s.panel,
                s.setting,
                s.run,
                s.share(),
                s.seeds,
                tuple(int(n) for n in s.sizes),
                s.edges()[CENTRAL_LEVEL].ratio,
                s.interval(),
                None if s.still is None else int(s.still.sum()),
            )
        )
    return out


def _x(v: float | None) -> str:
    return "none" if v is None or not np.isfinite(v) else f"{v:.2f}x"


def edge_table(rows: list[EdgeRow]) -> str:
    """The finding's table (markdown): per panel and setting, its budget as a share of the
    paper's steps x T, n*/count and its 95% interval over seeds, students still learning."""
    lines = [
        "| panel | our setting | budget (steps x T) | n* / count | 95% interval | still learning |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lo, hi = r.interval
        interval = f"{_x(lo)} to {_x(hi) if hi is not None else 'no edge'}"
        share = f"{100 * r.share:.0f}% of the paper's"
        still = "not known" if r.still is None else f"{r.still} of {r.seeds * len(r.sizes)}"
        lines.append(
            f"| Fig. 3{r.panel} | {r.setting} | {share} | **{_x(r.ratio)}** | {interval} "
            f"| {still} |"
        )
    return "\n".join(lines)


def span(rows: list[EdgeRow], panel: str) -> tuple[float, float]:
    """The lowest and highest n*/count of ``panel``'s rows (NaN where none has an edge)."""
    r = [x.ratio for x in rows if x.panel == panel and np.isfinite(x.ratio)]
    return (min(r), max(r)) if r else (float("nan"), float("nan"))


def numbers(rows: list[EdgeRow]) -> dict[str, str]:
    """The numbers the finding's sentence glues (name -> text): the shares of the paper's
    budget of Fig. 3A/B ("ab-share", "4-10%"), the lowest and highest n*/count over their
    rows ("ab-lo", "ab-hi"), n*/count at each setting of Fig. 3A ("A: <setting>"), the highest
    upper end of Fig. 3A's intervals ("a-reach"; "no edge" where one is open), and Fig. 3C's
    n*/count and the upper end of its interval ("c-ratio", "c-hi")."""
    ab = [r for r in rows if r.panel in "AB"]
    shares = sorted({round(100 * r.share) for r in ab})
    highs = [r.interval[1] for r in rows if r.panel == "A"]
    c = next(r for r in rows if r.panel == "C")
    out = {
        "ab-share": "-".join(f"{s}" for s in (shares[0], shares[-1])) + "%",
        "ab-lo": _x(min(r.ratio for r in ab)),
        "ab-hi": _x(max(r.ratio for r in ab)),
        "a-reach": "no edge" if None in highs else _x(max(highs)),
        "c-ratio": _x(c.ratio),
        "c-hi": _x(c.interval[1]),
    }
    out.update({f"A: {r.setting}": _x(r.ratio) for r in rows if r.panel == "A"})
    return out
