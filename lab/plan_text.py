"""A GPU plan (``gpu_plan.plan``) in words: its table, and the bounds under its total.

    format_plan(p)      each run's jobs, steps, members, kernels and FLOPs of its costliest
                        step, arithmetic, compiling and predicted device time; the total; then
                        what bounds it from below:
    tf32_floor_line(p)  the floor (every member at its own size) at the bench's TF32 peak,
                        where the bench measured one
    kernels_line(p)     the kernels and compiling alone, one job at a time: what the total
                        would be at any matmul speed, TF32's included

The prediction of a step is the larger of its kernels' launches and its FLOPs at the peak, so
no faster products take the total under ``kernels_line``'s minutes: only fewer kernels, or
jobs side by side, do.
"""

from __future__ import annotations

__all__ = ["format_plan", "tf32_floor_line", "kernels_line"]


def tf32_floor_line(p: dict) -> str:
    """The floor at the bench's TF32 peak, where it measured one: the campaign keeps float32,
    and whether TF32 would change the numbers is ``lab.tf32_check``'s question."""
    tf32 = p["calibration"].get("peak_tf32_flops")
    if not tf32:
        return "the floor with TF32 products: not known (the recorded bench did not measure them)"
    floor = p["floor_s"] * p["calibration"]["peak_flops"] / tf32
    return (f"the floor with TF32 products ({tf32 / 1e12:.1f} TFLOP/s measured): "
            f"{floor / 60:.1f} min;\nthe campaign keeps float32 (lab.tf32_check: the numbers "
            "TF32 gives)")  # fmt: skip


def kernels_line(p: dict) -> str:
    """The plan's kernels and compiling alone, one job at a time ("launch_s", "launch_fused_s",
    "compile_s"): its total at any matmul speed, which faster products (TF32's) leave as it is;
    "" for a plan without them."""
    if "launch_s" not in p:
        return ""
    upper = (p["launch_s"] + p["compile_s"]) / 60
    lower = (p["launch_fused_s"] + p["compile_s"]) / 60
    return (
        f"one job at a time, at any matmul speed (TF32's too), the total would be "
        f"{upper:.1f} min\n({lower:.1f} min, each generated kernel one launch): its "
        "kernels and compiling, which only\nfewer kernels or jobs side by side shorten"
    )


def format_plan(p: dict) -> str:
    """The plan as a table (kernels and GFLOP: of the costliest step of a run), the total and
    what the prediction leaves out."""
    cal = p["calibration"]
    mode = f"mode {p['mode']}" if p.get("mode") else "each run's own mode"
    lines = [
        f"on the recorded {p['gpu']} bench: {cal['t_kernel'] * 1e6:.2f} us a kernel, "
        f"{cal['peak_flops'] / 1e12:.1f} TFLOP/s; a step costs the larger",
        f"every step counted on this CPU in {mode}",
        f"{'run':<32} {'jobs':>4} {'steps':>10} {'memb.':>5} "
        f"{'kernels':>7} {'GFLOP':>6} {'arith.':>6} {'compile':>7} {'device time':>12}",
    ]
    for r in p["runs"]:
        mark = "" if r["gated_only"] else " *"
        lines.append(
            f"{r['name']:<32} {r['jobs']:>4} {r['steps']:>10,} {r['members']:>5} "
            f"{r['kernels']:>7.0f} {r['gflop']:>6.2f} {r['arithmetic_s'] / 60:>6.1f} "
            f"{r['compile_s'] / 60:>7.1f} {r['device_s'] / 60:>8.1f} min{mark}"
        )
    blank = f"{'':>4} {'':>10} {'':>5} {'':>7} {'':>6}"
    lines.append(f"{'total':<32} {blank} {p['arithmetic_s'] / 60:>6.1f} {'':>7} "
                 f"{p['total_s'] / 60:>8.1f} min")  # fmt: skip
    lines.append(f"the total is {p['fused_s'] / 60:.1f} min if a GPU fused every kernel that "
                 "torch.compile generates")  # fmt: skip
    lines.append("into one launch; above, each of their loop nests is counted as one (a GPU")
    lines.append("kernel runs one), an upper estimate")
    lines.append("arith.: minutes of the jobs' FLOPs as they train (narrower members zero-padded)")
    lines.append("at the recorded float32 matmul peak (TF32 off): a floor for these jobs that no")
    lines.append("fewer kernels and no jobs side by side go under")
    lines.append(f"floor: {p['floor_s'] / 60:.1f} min, the same with every member at its own size "
                 "(no padding, no")  # fmt: skip
    lines.append("masked neurons): the least these runs' products take at that peak, however")
    lines.append("they are grouped, fused or overlapped; at 6 FLOPs a parameter and token (2")
    per = p["per_parameter_s"] / 60
    lines.append(f"forward, 4 backward: about any implementation's products) {per:.1f} min")
    lines.append(tf32_floor_line(p))
    lines += [kernels_line(p)] if "launch_s" in p else []
    lines.append("compile: minutes a first run of each job takes over a second, on this CPU with")
    lines.append(
        "inductor's caches off (a GPU compiles other kernels, on other cores); in the total"
    )
    lines.append("* other families: their loops over t launch kernels at every t")
    lines.append(_side_by_side_line(p))
    return "\n".join(lines)


def _side_by_side_line(p: dict) -> str:
    """What the plan assumed of jobs side by side."""
    K = p.get("side_by_side", 1)
    if K <= 1:
        return "a run's jobs one after another (--side-by-side K: up to K at once)"
    if not p["calibration"].get("side_by_side"):
        return f"up to {K} jobs at once asked, but the bench measured no speedup: one after another"
    gains = ", ".join(f"{r['name']} {r['speedup']:.1f}x" for r in p["runs"] if r["speedup"] > 1)
    return f"up to {K} jobs at once, at the bench's measured speedup: {gains or 'none'}"
