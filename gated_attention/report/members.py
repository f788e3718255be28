"""One row per trained member of a teacher-identification run: is it the construction?

Every table of the teacher-identification chapter that goes member by member (this build's
held-out seeds, the recorded paper-budget runs, the sensitivity runs, the many-seed run) is the
same five steps: reverse-engineer the member (``analysis.reverse_engineer``), count its groups,
normalise its held-out loss by the teacher's variance, decide whether it learned the
construction (``analysis.learned``), and print a row. This module does them once:

    MemberRow      one member: seed, counts after pruning (hidden = lam~1 + lam~0 + between,
                   output), normalised loss, Score KV / Q, learned, merged output groups
    member_rows    the rows of every member of a run (a results entry of TeacherStudentConfig)
    member_table   the rows as text, the paper's counts in the first line
    fractions      over the rows: how many prune to exactly 14 = 10 + 4, how many learned the
                   construction, how many have an output-gating group that merges
    held_out_values  Table 1 over every held-out seed (medians), and App. C.2's merging: is the
                   neuron a merged group becomes the construction's output neuron?
    spectrum_lines each group's state spectrum (ours: are surplus neurons near-copies?)
"""

from __future__ import annotations

import dataclasses

from .. import analysis, experiments

__all__ = [
    "MemberRow",
    "member_rows",
    "member_table",
    "fractions",
    "held_out_values",
    "SELECTOR_SHARE",
    "spectrum_lines",
    "CONSTRUCTION",
]

#: the symmetric construction's counts for d = 4: (hidden, lam ~ 1, lam ~ 0)
CONSTRUCTION = (14, 10, 4)


@dataclasses.dataclass(frozen=True)
class MemberRow:
    """One trained member, reverse-engineered (``rev`` keeps the whole analysis)."""

    seed: int
    hidden: int
    lam_one: int
    lam_zero: int
    between: int
    output: int
    norm_loss: float
    score_kv: float
    score_q: float
    learned: bool
    merged: int  # output-gating groups that merge into one neuron
    rev: analysis.ReverseEngineering = dataclasses.field(repr=False, compare=False)
    loss: float = float("nan")  # held-out MSE (Table 1's loss)

    @property
    def counts(self) -> tuple[int, int, int]:
        """(hidden, lam ~ 1, lam ~ 0), as the construction's counts are given."""
        return self.hidden, self.lam_one, self.lam_zero


def member_rows(run, *, prune_tol: float, revs: list | None = None) -> list[MemberRow]:
    """The rows of every member of ``run`` (an ``experiments.run`` or ``recorded`` result of a
    TeacherStudentConfig with one size), in the order of its seeds.

    ``revs``: reverse engineerings already computed, member by member (reused, not redone).
    """
    config = run.config
    students = run.students()
    if revs is not None and len(revs) != len(students):
        raise ValueError(f"{len(revs)} reverse engineerings for {len(students)} members")
    _, norm = experiments.normalised_losses(config, run.tensors["eval_loss"])
    rows = []
    for e, (student, seed) in enumerate(zip(students, config.seeds, strict=True)):
        r = (
            revs[e]
            if revs is not None
            else analysis.reverse_engineer(
                analysis.network(student),
                config.task(seed).teacher,
                T=config.T,
                prune_tol=prune_tol,
            )
        )
        c = r.groups.counts()
        loss = float(norm[0, e])
        rows.append(
            MemberRow(
                seed=int(seed),
                hidden=r.pruned.net.n,
                lam_one=c["one"],
                lam_zero=c["zero"],
                between=c["between"],
                output=r.pruned.net.m,
                norm_loss=loss,
                loss=float(run.tensors["eval_loss"][e]),
                score_kv=r.score_kv,
                score_q=r.score_q,
                learned=analysis.learned(loss, r.score_kv, r.score_q),
                merged=len(r.merged.groups),
                rev=r,
            )
        )
    return rows


def member_table(rows: list[MemberRow], paper: tuple[int, int, int, int] | None = None) -> str:
    """The rows as fixed-width text; ``paper``: (hidden, lam~1, lam~0, output) shown first."""
    head = (
        f"{'seed':>5} {'hidden':>6} {'lam~1':>5} {'lam~0':>5} {'other':>5} {'output':>6} "
        f"{'loss/var':>9} {'Score KV':>9} {'Score Q':>9} {'learned':>7} {'merged':>6}"
    )
    lines = [head]
    if paper is not None:
        h, one, zero, out = paper
        lines.append(f"{'paper':>5} {h:>6} {one:>5} {zero:>5} {'':>5} {out:>6}")
    for r in rows:
        lines.append(
            f"{r.seed:>5} {r.hidden:>6} {r.lam_one:>5} {r.lam_zero:>5} {r.between:>5} "
            f"{r.output:>6} {r.norm_loss:>9.2g} {r.score_kv:>9.2g} {r.score_q:>9.2g} "
            f"{str(r.learned):>7} {r.merged:>6}"
        )
    return "\n".join(lines)


def fractions(rows: list[MemberRow], want: tuple[int, int, int] = CONSTRUCTION) -> dict:
    """Over ``rows``: members pruned to exactly ``want``, that learned the construction, and
    with a merging output group; each as (count, of, Wilson 95% interval)."""
    if not rows:
        raise ValueError("no members to count")
    R = len(rows)
    out = {}
    for key, k in (
        ("construction_counts", sum(r.counts == tuple(want) for r in rows)),
        ("learned", sum(r.learned for r in rows)),
        ("merge_found", sum(r.merged > 0 for r in rows)),
    ):
        out[key] = (k, R, analysis.wilson_interval(k, R))
    return out


#: a merged group's neuron is the construction's output neuron when at least this share of its
#: kernel reads a key-value neuron times a query neuron (``analysis.selector_share``)
SELECTOR_SHARE = 0.99


def held_out_values(rows: list[MemberRow]) -> list[tuple[str, float, str]]:
    """(id, value, note) over every member of ``rows`` (the held-out seeds): Table 1's four
    numbers as medians over them (``table1.*_median``), and the share of the groups merged in
    any of them whose neuron is the construction's output neuron (``fig2.merged_is_output_neuron``,
    share at least SELECTOR_SHARE; NaN with "premise fails" when no group merged)."""
    if not rows:
        raise ValueError("no members")
    import statistics

    out = [
        (f"table1.{key}_median", float(statistics.median(get(r) for r in rows)), "")
        for key, get in (
            ("loss", lambda r: r.loss),
            ("score_kv", lambda r: r.score_kv),
            ("score_q", lambda r: r.score_q),
            ("poly_distance", lambda r: r.rev.poly_distance),
        )
    ]
    shares = [
        (r.seed, sh)
        for r in rows
        for sh in analysis.merged_selector_shares(r.rev.merged, r.rev.groups.one, r.rev.groups.zero)
    ]
    if shares:
        ok = sum(sh >= SELECTOR_SHARE for _, sh in shares)
        note = "shares: " + ", ".join(f"seed {seed} {sh:.3g}" for seed, sh in shares)
        out.append(("fig2.merged_is_output_neuron", ok / len(shares), note))
    else:
        note = "premise fails: no output-gating group merged in any held-out seed"
        out.append(("fig2.merged_is_output_neuron", float("nan"), note))
    return out


def spectrum_lines(
    label: str, net: analysis.Network, groups, x, counts: dict[str, int]
) -> tuple[str, list[tuple[float, float]]]:
    """The state spectrum of each group of a network, as text (``analysis.state_spectrum``:
    singular values of the group's states over the batch ``x`` (B, T, d), relative to the
    largest); ``groups``: the network's ``analysis.LamGroups``.

    ``counts``: group name ("key-value", "query") -> the construction's count of directions.
    Returns (text, [(largest ratio of neighbours within the count, drop right after it)] for
    each group with more neurons than the count).
    """
    import numpy as np

    lines, surplus = [], []
    for group, idx in zip(counts, (groups.one, groups.zero), strict=True):
        s = analysis.state_spectrum(net, x, idx)
        c = min(counts[group], len(s))
        ratios = [float(s[i] / s[i + 1]) for i in range(c - 1)]
        within = max(ratios, default=float("nan"))
        drop = analysis.drop_after(s, counts[group])
        shown = np.array2string(
            s.numpy(),
            max_line_width=72,
            separator=" ",
            formatter={"float_kind": lambda v: f"{v:.2e}"},
        )
        drop_text = "n/a (no surplus)" if drop is None else f"{drop:.3g}"
        lines.append(
            f"{label} {group}: {len(idx)} neurons; largest ratio of neighbours within the "
            f"first {c}: {within:.3g}; drop after {counts[group]}: {drop_text}\n  {shown}"
        )
        if drop is not None:
            surplus.append((within, drop))
    return "\n".join(lines), surplus
