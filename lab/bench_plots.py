"""The results of the bench (``lab.bench.run_bench``) as a figure, for the chapter
"Performance".

    plot_bench   three bar panels: the engine against the reference loop, an ensemble against
                 sequential runs, and the engine's FLOP rate against the machine's matrix peak
    plot_size_curve  the engine's steps/s against the model size n = m, with the rate the
                 Eq. (2) floor allows at the bench size
    size_curves  the size curves of this machine's bench and of the recorded ones, and the floor

Like ``bench_table``, this module reads result dicts only: it measures nothing.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

__all__ = ["plot_bench", "plot_size_curve", "size_curves"]


def plot_bench(results: dict) -> plt.Figure:
    """Three bar charts of a bench result dict, each titled with its ratio.

    Left: steps per second of the reference loop and of the engine (Sec. 4.1 student); middle:
    member-steps per second of 16 sequential runs and of one ensemble of 16 (n = 28); right:
    the engine's GFLOP/s against the best GFLOP/s of a large matrix product.
    """
    r = results
    panels = [  # (bar labels, values, colours, y label, title)
        (
            ["reference", "engine"],
            [r["reference_steps_per_s"], r["engine_steps_per_s"]],
            ["0.6", "C0"],
            "steps / s",
            f"Sec. 4.1 student: {r['engine_speedup']:.1f}x",
        ),
        (
            ["16\nsequential", "16\nbatched"],
            [r["sequential_steps_per_s"], r["batched_steps_per_s"]],
            ["0.6", "C1"],
            "member-steps / s",
            f"ensemble of 16 (n = 28):\n{r['ensemble_speedup']:.1f}x",
        ),
        (
            ["engine", "matmul\npeak"],
            [r["engine_gflops"], r["gemm_peak_gflops"]],
            ["C0", "0.3"],
            "GFLOP/s",
            f"{100 * r['peak_fraction']:.0f}% of the peak",
        ),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(7.5, 3.0), layout="constrained")
    for ax, (labels, values, colours, ylabel, title) in zip(axes, panels, strict=True):
        ax.bar(labels, values, color=colours)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
    return fig


def plot_size_curve(curves: dict[str, list], floor: tuple[int, float] | None = None) -> plt.Figure:
    """Steps/s against n = m (log-log), one line per named curve ([(n, steps/s), ...]);
    ``floor``: (n, steps/s) the Eq. (2) floor allows at one size, drawn as a point."""
    fig, ax = plt.subplots(figsize=(5.5, 3.4), layout="constrained")
    for label, curve in curves.items():
        ns, rates = zip(*curve, strict=True)
        ax.plot(ns, rates, "o-", label=label)
    if floor is not None:
        ax.plot([floor[0]], [floor[1]], "k*", ms=10, label="Eq. (2) floor (products alone)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n = m (hidden and output-gating neurons)", fontsize=10)
    ax.set_ylabel("training steps per second", fontsize=10)
    ax.tick_params(labelsize=9)
    ax.legend(fontsize=9)
    return fig


def size_curves(
    results: dict, recorded: dict[str, dict]
) -> tuple[dict[str, list], tuple[int, float] | None]:
    """What ``plot_size_curve`` draws: the size curve of this machine's bench (``results``),
    labelled "this machine", and of each recorded bench that has one (``recorded``: name ->
    result dict), labelled "NAME (recorded)"; and the floor (n of the step profile, the steps/s
    its Eq. (2) floor allows), None without a step profile."""
    curves = {"this machine": results["size_curve"]} if "size_curve" in results else {}
    for name, rec in recorded.items():
        if "size_curve" in rec:
            curves[f"{name} (recorded)"] = rec["size_curve"]
    prof = results.get("step_profile")
    floor = (prof["config"]["n"], 1e3 / prof["eq2_floor_ms"]) if prof else None
    return curves, floor
