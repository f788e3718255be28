"""The Sec. 5.2 analysis of an in-context regression run (``analyse_regression``): the paired gap
of Table 2's networks to one optimal GD step, their coefficients of x_t[i] y_t[1] x_q[i] against
eta*, the gap per size and seed (Fig. 3C), out of distribution, and lam of the used neurons.
Why: book/rnns_learn_gd.md.

Glossary (code name -> paper symbol -> section):
    eta_star     eta* = 5/74, the optimal GD step size        Sec. 5.1 / App. D.2
    gd_loss      7/74, the loss of one optimal GD step        Sec. 5.2
    n_top        n = m = 80, the networks of Table 2          Table 2
    k            len(top), the networks of Table 2 (every seed of size n_top)"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..analysis.boundary import member, network
from ..analysis.polynomial import rnn_polynomial
from ..analysis.pruning import input_products
from ..analysis.success import Fractions, transition_by_fraction
from ..analysis.thresholds import MEMORY_LAM_ICL, PRUNE_TOL
from ..experiments import in_context_regression
from ..models.gated_rnn import lam_from_nu
from ..tasks import gd_theory, regression
from .fig3_rows import ScoreRow

#: the paper's RNN - GD gap over GD, about -0.2%: derived from Sec. 5.2's two losses, never a column
PAPER_GAP = (0.0945 - 0.0947) / 0.0947
#: standard errors from zero from which a gap's sign counts as resolved (the note's, no criterion)
SIGN_RESOLVED_SE = 2.0


@dataclasses.dataclass(frozen=True)
class RegressionAnalysis:
    """The Sec. 5.2 numbers of one run; k = len(top) networks in Table 2, S sizes in Fig. 3C."""

    n_top: int
    top: np.ndarray  # (k,) member indices of Table 2's networks
    top_seeds: np.ndarray  # (k,)
    gd_mean: float  # the GD step's mean loss on the evaluation set
    top_rnn_mean: np.ndarray  # (k,) each network's mean loss
    top_gap: np.ndarray  # (k,) each network's paired gap RNN - GD
    top_gap_se: np.ndarray  # (k,)
    raw_mean: float  # mean loss of the k networks on the evaluation set
    gap: float  # paired gap of the seed mean
    gap_se: float
    coefs: np.ndarray  # (k, t, i) GD-term coefficients of the first output
    residual_ratios: np.ndarray  # (k,) other coefficients' norm / GD terms' norm
    sweep: tuple[int, ...]  # the S sizes of Fig. 3C
    gap_table: np.ndarray  # (S, seeds) paired gap / GD loss
    ood_rnn: float  # OOD: mean loss of Table 2's networks
    ood_gd: float
    ood_gap: float
    ood_gap_se: float
    lam_used: np.ndarray  # lam of the used hidden neurons of Table 2's networks, all seeds

    @property
    def memory_lam(self) -> np.ndarray:
        """lam of the memory neurons (lam > MEMORY_LAM_ICL) of Table 2's networks, all seeds."""
        return self.lam_used[self.lam_used > MEMORY_LAM_ICL]

    @property
    def rnn_loss(self) -> float:
        """7/74 + the seed mean's paired gap: the low-variance estimate of the RNN's loss."""
        return regression.GD_MIN_LOSS + self.gap

    @property
    def per_seed_coefs(self) -> np.ndarray:
        """(k, i): the coefficients averaged over the observation steps t."""
        return self.coefs.mean(axis=1)

    @property
    def coef_rel_error_worst_t(self) -> float:
        """max over t and i of |seed mean of the coefficient at step t - eta*| / eta*."""
        eta = regression.ETA_STAR
        return float(np.abs(self.coefs.mean(axis=0) - eta).max() / eta)

    def transition_learned(self, threshold: float) -> Fractions:
        """Fig. 3C by per-seed successes: a seed succeeds at a size when its paired gap to the
        optimal GD step is at most ``threshold`` of the GD loss (``analysis.success``)."""
        return transition_by_fraction(self.sweep, self.gap_table <= threshold)

    @property
    def coef_rel_error(self) -> float:
        """max over i of |seed mean of the t-averaged coefficient - eta*| / eta*."""
        eta = regression.ETA_STAR
        return float(np.abs(self.per_seed_coefs.mean(axis=0) - eta).max() / eta)


def analyse_regression(result) -> RegressionAnalysis:
    """The analysis of a ``RegressionConfig`` run (``experiments.run`` or ``recorded``).
    TypeError: another config; ValueError: a run stored without the per-network gaps."""
    config, T = result.config, result.tensors
    if not isinstance(config, in_context_regression.RegressionConfig):
        raise TypeError(f"expected a run of RegressionConfig, got {type(config).__name__}")
    task = config.task  # T = observations + 1 inputs, the last the query
    missing = [k for k in ("eval_gap", "eval_rnn_table2", "ood_rnn_table2") if k not in T]
    if missing:
        raise ValueError(
            f"run {result.path} lacks {', '.join(missing)}: it was stored by an older version "
            "that kept per-sequence losses of every network; recompute it"
        )
    sizes, seeds = T["sizes"].numpy(), T["seeds"].numpy()
    top = np.array(config.table2_members())
    gd_eval = T["eval_gd"]
    gd_mean = gd_eval.mean().item()
    gap, gap_se = regression.paired_difference(T["eval_rnn_table2"], gd_eval)
    terms = [
        gd_theory.gd_terms(rnn_polynomial(network(member(result.params, int(e))), task.T), task.d_x)
        for e in top
    ]
    sweep = tuple(sorted(set(sizes.tolist())))
    rel = T["eval_gap"].numpy() / gd_mean
    gap_table = np.stack([rel[sizes == n] for n in sweep])
    ood_gap, ood_se = regression.paired_difference(T["ood_rnn_table2"], T["ood_gd"])
    p = result.params
    # used: not silent under the first pruning rule, (k, n)
    used = input_products(p["W_in1"][top], p["W_in2"][top]) > PRUNE_TOL
    lam_used = lam_from_nu(p["nu"][top])[used].numpy()
    return RegressionAnalysis(
        n_top=max(config.sizes),
        top=top,
        top_seeds=seeds[top],
        gd_mean=gd_mean,
        top_rnn_mean=T["eval_rnn_mean"][top].numpy(),
        top_gap=T["eval_gap"][top].numpy(),
        top_gap_se=T["eval_gap_se"][top].numpy(),
        raw_mean=T["eval_rnn_mean"][top].mean().item(),
        gap=gap,
        gap_se=gap_se,
        coefs=np.stack([t.coefs for t in terms]),
        residual_ratios=np.array([t.residual_ratio for t in terms]),
        sweep=sweep,
        gap_table=gap_table,
        ood_rnn=T["ood_rnn_mean"][top].mean().item(),
        ood_gd=T["ood_gd"].mean().item(),
        ood_gap=ood_gap,
        ood_gap_se=ood_se,
        lam_used=lam_used,
    )


def score_rows(a: RegressionAnalysis, n_seeds: int, run: str = "") -> list[ScoreRow]:
    """The scorecard rows of ``a`` but the GD loss's Monte Carlo one: Sec. 5.2, Table 2, Fig. 3C
    (``n_seeds`` per size) and OOD; ``run``: the recorded run's name, "" for this build's."""
    k = len(a.top)
    by_seed = a.transition_learned(in_context_regression.TRANSITION_THRESHOLD)
    per_size = ", ".join(
        f"{n}: {k_}/{by_seed.R}" for n, k_ in zip(by_seed.sizes, by_seed.k, strict=True)
    )
    transition = float("nan") if by_seed.estimate is None else by_seed.estimate
    rows = [  # (id, value, seeds, note)
        (
            "sec5.rnn_loss",
            a.rnn_loss,
            k,
            f"n = {a.n_top}, mean over seeds: 7/74 + paired gap (+- {a.gap_se:.1e})",
        ),
        ("sec5.loss_gap_rel", abs(a.gap) / a.gd_mean, k, gap_note(a.gap, a.gap_se, a.gd_mean)),
        ("sec5.loss_gap_se", a.gap_se, k, "standard error of the paired RNN - GD difference"),
        (
            "table2.coef_rel_error_max",
            a.coef_rel_error,
            k,
            "seed mean of the t-averaged coefficient, worst of the three",
        ),
        (
            "table2.coef_rel_error_worst_t",
            a.coef_rel_error_worst_t,
            k,
            "seed mean at each t, worst t of the three terms",
        ),
        ("table2.residual_ratio", float(a.residual_ratios.max()), k, "largest over seeds"),
        (
            "fig3c.transition_learned",
            transition,
            n_seeds,
            f"seeds within the threshold per size: {per_size}",
        ),
        ("sec5.ood_rnn_loss", a.ood_rnn, k, ""),
        ("sec5.ood_gd_loss", a.ood_gd, None, "exact: 7/37 = 0.189"),
    ]
    return [ScoreRow(i, v, seeds=s, note=n, run=run) for i, v, s, n in rows]


def gap_note(gap: float, gap_se: float, gd: float) -> str:
    """The note of ``sec5.loss_gap_rel`` (its criterion reads |gap|): the signed gap RNN - GD over
    ``gd`` +- SE, its distance from zero in SEs, and its sign against PAPER_GAP's."""
    rel, se = gap / gd, gap_se / gd
    side = "above" if gap > 0 else "below"
    text = f"signed: RNN - GD = {rel:+.2%} +- {se:.2%} of GD, paired"
    paper = f"the paper's {PAPER_GAP:+.1%} (RNN below GD)"
    if gap == 0:
        return f"{text}; no gap, {paper}"
    if gap_se > 0:
        z = abs(gap) / gap_se
        many = f"{z:.1f}" if z < 100 else "over 100"
        text += f" ({many} SE {side} zero)"
        if z < SIGN_RESOLVED_SE:
            return f"{text}; its sign is not resolved; {paper}"
    if (gap > 0) == (PAPER_GAP > 0):
        return f"{text}: RNN {side} GD, the sign of {paper}"
    return f"{text}: RNN {side} GD, the opposite sign to {paper}"
