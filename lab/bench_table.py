"""The results of ``make bench`` (``lab.bench.run_bench``) as plain-text tables.

    format_table     the engine against the reference, ensembles, FLOP rates, the floor, the
                     device and subnormals; works on bench files of older versions too
    format_families  the training cost per step of every model family (``lab.family_bench``)
    format_profile   where a step's time goes, part by part, and Eq. (2)'s floor
                     (``lab.step_profile``)
    format_ways      each way to the floor, a row beside the engine's step, and the operations
                     a step launches against the ensemble's size (``lab.device_time``)
    format_overlap   jobs side by side on a GPU: K at once against one alone
                     (``lab.bench_overlap``)
    format_side_by_side  this machine's bench beside recorded ones (a GPU), one column each
    profile_note     what a profile's build does without a bench file
    bench_origin     where a bench's numbers come from, when and with which bench profile
    format_products_floor  the eleven products of an engine step, each timed, against the step
                     and against the reference's step over its speed-up target
    ensemble_floor_rows    the 16-member ensemble's whole step over its products floor
    format_subnormal the trained students timed with and without subnormals, and the verdict
    format_recorded_bench  a recorded bench (a GPU): where it ran, its table, its targets
    engine_against_peak    the engine's step time against that of its products at the peak

This module reads result dicts only: it measures nothing and imports nothing from ``tools``.
"""

from __future__ import annotations

__all__ = [
    "PAPER_STEPS",
    "format_table",
    "format_families",
    "format_profile",
    "format_overlap",
    "format_ways",
    "format_side_by_side",
    "profile_note",
    "bench_origin",
    "format_products_floor",
    "ensemble_floor_rows",
    "format_subnormal",
    "format_recorded_bench",
    "engine_against_peak",
]

#: the step count of the paper's main run (Sec. 4.1), for the projected time
PAPER_STEPS = 1_000_000


def format_table(r: dict) -> str:
    """The bench results as a plain-text table."""
    rows = [
        ("engine (fast), Sec. 4.1 config", f"{r['engine_steps_per_s']:.1f} steps/s"),
        ("reference loop, Sec. 4.1 config", f"{r['reference_steps_per_s']:.1f} steps/s"),
        ("  engine / reference", f"{r['engine_speedup']:.1f}x (target >= 5x)"),
        (
            f"  {PAPER_STEPS:,} steps at the engine's rate",
            f"{PAPER_STEPS / r['engine_steps_per_s'] / 3600:.1f} h (the paper's Sec. 4.1 run, "
            "one student)",
        ),
        *_compiled_rows(r, "compiled_steps_per_s", "engine (compiled), Sec. 4.1 config", "steps/s"),
        ("16 x n=28 ensemble, batched", f"{r['batched_steps_per_s']:.1f} member-steps/s"),
        *_compiled_rows(
            r, "batched_compiled_steps_per_s", "16 x n=28 ensemble, compiled", "member-steps/s"
        ),
        *ensemble_floor_rows(r),
        ("16 x n=28, sequential runs", f"{r['sequential_steps_per_s']:.1f} member-steps/s"),
        ("  batched / sequential", f"{r['ensemble_speedup']:.1f}x (target >= 3x)"),
        ("FLOPs per step (fwd + bwd)", f"{r['step_gflop'] * 1e3:.0f} MFLOP"),
        ("engine achieved", f"{r['engine_gflops']:.1f} GFLOP/s"),
        (f"matmul peak ({r['gemm_size']}^3 float32)", f"{r['gemm_peak_gflops']:.1f} GFLOP/s"),
        ("  engine / peak", f"{100 * r['peak_fraction']:.0f}%"),
        *(
            [("  with TF32 products allowed", f"{r['gemm_peak_tf32_gflops']:.1f} GFLOP/s")]
            if r.get("gemm_peak_tf32_gflops")
            else []
        ),
        *_floor_rows(r),
        ("torch, threads", f"{r['torch_version']}, {r['threads']}"),
        *_device_rows(r),
        *_subnormal_rows(r.get("subnormal"), r.get("device", "cpu")),
        ("cpu", f"{r['hardware']['cpu']} ({r['hardware']['cpu_count']} cores)"),
    ]
    width = max(len(a) for a, _ in rows)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in rows)


def _compiled_rows(r: dict, key: str, label: str, unit: str) -> list[tuple[str, str]]:
    """A row of mode "compiled", with its gain over mode "fast" (none in older or smoke
    benches)."""
    if r.get(key) is None:
        return []
    fast = r["engine_steps_per_s" if key.startswith("compiled") else "batched_steps_per_s"]
    return [(label, f"{r[key]:.1f} {unit} ({r[key] / fast:.2f}x fast)")]


def ensemble_floor_rows(r: dict) -> list[tuple[str, str]]:
    """The 16 x n = 28 ensemble's whole step (data drawn, optimiser, loop) over its products
    floor (``ensemble_profile``: the products of its step, each timed alone), in mode fast and,
    where measured, compiled; and the compiled step without drawing data (the ways' fixed
    batch). None of these in a bench without the ensemble's profile."""
    prof = r.get("ensemble_profile")
    if not prof or not prof.get("products_ms"):
        return []
    E, floor = prof["config"]["ensemble"], sum(prof["products_ms"].values())
    ratios = {"fast": 1e3 * E / r["batched_steps_per_s"] / floor}
    if r.get("batched_compiled_steps_per_s"):
        ratios["compiled"] = 1e3 * E / r["batched_compiled_steps_per_s"] / floor
    text = ", ".join(f"{v:.2f}x {k}" for k, v in ratios.items())
    rows = [("  step / its products floor", f"{text}, data drawn (target <= 2x)")]
    bare = [w for w in r.get("ways") or [] if w["way"] == "compiled" and w.get("ensemble_ms")]
    if bare:
        ms = bare[0]["ensemble_ms"]
        rows.append(
            ("    without drawing data", f"{ms / floor:.2f}x compiled ({floor:.2f} ms floor)")
        )
    return rows


def _floor_rows(r: dict) -> list[tuple[str, str]]:
    """The products-only floor of a step and the speed-up bound (absent in older benches)."""
    if "products_floor_ms" not in r:
        return []
    ms = r["products_floor_ms"]
    return [
        ("step's products alone (floor)", f"{ms:.2f} ms per step, each timed on its own"),
        (
            "  reference step / floor",
            f"{r['engine_speedup_bound']:.1f}x (the most an engine "
            "issuing these products can gain here)",
        ),
    ]


def _device_rows(r: dict) -> list[tuple[str, str]]:
    """The device and, off the CPU, its agreement with the CPU (results of older benches: CPU)."""
    dev = r.get("device", "cpu")
    if dev == "cpu":
        return [("device", "cpu")]
    diff = r["device_max_abs_diff"]
    return [("device", dev), ("  largest weight difference to the CPU", f"{diff:.1e} (float64)")]


def _subnormal_rows(sub: dict | None, device: str = "cpu") -> list[tuple[str, str]]:
    """The subnormal measurement, or why there is none."""
    if device != "cpu":
        return [("trained student, subnormals", "not measured (a CPU measurement)")]
    if not sub:
        return [("trained student, subnormals", "not measured (no cached quick run)")]
    return [
        (
            f"trained students (x{sub['members']}), fwd+bwd",
            f"{sub['flushed_ms']:.2f} ms flushed, {sub['subnormal_ms']:.2f} ms with subnormals",
        ),
        ("  subnormal slowdown (1 thread)", f"{sub['slowdown']:.1f}x"),
    ]


def format_families(fam: dict | None) -> str:
    """The family costs (``family_costs``, or a bench's "families" entry) as a table: one row
    per family, its time per step also relative to the gated RNN's; None says not measured."""
    if not fam:
        return "family costs: not measured (a bench file from before them)"
    c, costs = fam["config"], fam["costs"]
    base = costs.get("gated", {}).get("ms_per_step")
    head = (
        f"{c['ensemble']} members, d = {c['d']}, T = {c['T']}, batch {c['batch']}, "
        f"~{c['target_params']:,} parameters each, {c['dtype']}, on {fam['device']} "
        f"({fam['threads']} thread{'s' if fam['threads'] != 1 else ''}); fastest of "
        f"{c['repeats']} x {c['steps']} steps"
    )
    cols = ("family", "width", "params", "ms/step", "member-steps/s", "vs gated")
    rows = [
        (
            f"{name} ({r['label']})",
            str(r["width"]),
            f"{r['params']:,}",
            f"{r['ms_per_step']:.2f}",
            f"{r['member_steps_per_s']:,.0f}",
            f"{r['ms_per_step'] / base:.1f}x" if base else "-",
        )
        for name, r in costs.items()
    ]
    widths = [max(len(row[i]) for row in (cols, *rows)) for i in range(len(cols))]

    def line(row: tuple[str, ...]) -> str:
        first = f"{row[0]:<{widths[0]}}"
        return "  ".join([first, *(f"{v:>{w}}" for v, w in zip(row[1:], widths[1:], strict=True))])

    return "\n".join([head, line(cols), *(line(row) for row in rows)])


def format_profile(p: dict | None) -> str:
    """The step profile (``lab.step_profile.step_profile``) as a plain-text table."""
    if not p:
        return "step profile: not measured (a bench file from before it)"
    c = p["config"]
    E = c.get("ensemble", 1)
    who = "one student" if E == 1 else f"an ensemble of {E}"
    rows = [
        (
            f"one step, {who} (n = m = {c['n']}, T {c['T']}, batch {c['batch']})",
            f"{p['step_ms']:.2f} ms",
        ),
        ("  data (drawing batches)", f"{p['data_ms']:.2f} ms"),
        ("  loss: forward + backward", f"{p['loss_ms']:.2f} ms"),
        *[(f"    products: {k}", f"{v:.2f} ms") for k, v in p["products_ms"].items()],
        ("    elementwise and the rest of the loss", f"{p['loss_minus_products_ms']:.2f} ms"),
        ("  optimiser (AdamW + schedule)", f"{p['optimiser_ms']:.2f} ms"),
        ("  other (the loop)", f"{p['other_ms']:.2f} ms"),
        (
            "Eq. (2) floor: output gating + readout",
            f"{p['eq2_floor_ms']:.2f} ms "
            f"(any implementation; {1e3 / p['eq2_floor_ms']:.0f} steps/s at most)",
        ),
    ]
    width = max(len(a) for a, _ in rows)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in rows)


#: the rows of ``format_side_by_side``: (label, key, format)
SIDE_ROWS = (
    ("engine, Sec. 4.1 config (steps/s)", "engine_steps_per_s", "{:.0f}"),
    ("reference loop (steps/s)", "reference_steps_per_s", "{:.0f}"),
    ("engine / reference", "engine_speedup", "{:.1f}x"),
    ("16 x n=28 ensemble (member-steps/s)", "batched_steps_per_s", "{:.0f}"),
    ("16 x n=28 sequential (member-steps/s)", "sequential_steps_per_s", "{:.0f}"),
    ("batched / sequential", "ensemble_speedup", "{:.1f}x"),
    ("1,000,000 steps of one student (h)", "paper_run_hours", "{:.2f}"),
)


def format_side_by_side(columns: dict[str, dict]) -> str:
    """Bench results side by side, one column per named result (e.g. {"this CPU": ..., "H200
    (recorded)": ...}); a key a result lacks shows as "-"."""
    names = list(columns)
    width = max(len(label) for label, _, _ in SIDE_ROWS)
    col = max(12, *(len(n) for n in names))
    lines = [f"{'':<{width}}  " + "  ".join(f"{n:>{col}}" for n in names)]
    for label, key, fmt in SIDE_ROWS:
        cells = [fmt.format(r[key]) if key in r else "-" for r in columns.values()]
        lines.append(f"{label:<{width}}  " + "  ".join(f"{c:>{col}}" for c in cells))
    return "\n".join(lines)


def format_ways(ways: list[dict] | None, kernels: list[dict] | None = None) -> str:
    """The ways to the floor (``bench_ways.ways_to_floor``): ms per step of one student and of
    the 16-member ensemble, each against the engine's; then the kernels a step launches, by
    members and mode (``device_time.kernels_by_members``). None: not measured (an older bench
    file)."""
    if not ways:
        return "ways to the floor: not measured here (make bench measures them)"
    base = next((w for w in ways if w["way"] == "engine"), {})

    def cell(w: dict, key: str) -> str:
        if w.get(key) is None:
            return "-"
        steps = w["way"] not in ("engine",) and not w["way"].startswith("data")
        rel = f" ({base[key] / w[key]:.2f}x)" if base.get(key) and steps else ""
        return f"{w[key]:.3f}{rel}"

    width = max(len(w["what"]) for w in ways)
    head = f"{'way (ms per step; engine / this way)':<{width}}  {'one student':>18}  16 x n=28"
    lines = [head]
    for w in ways:
        if w.get("error"):
            lines.append(f"{w['what']:<{width}}  not run here: {w['error'][:36]}")
            continue
        lines.append(f"{w['what']:<{width}}  {cell(w, 'one_ms'):>18}  {cell(w, 'ensemble_ms')}")
    if kernels:
        sizes = sorted({r["members"] for r in kernels})
        lines.append("kernels a step launches (the step's own + drawing its data), by members:")
        lines.append(f"{'members':<14}" + "".join(f"{E:>7}" for E in sizes[:1])
                     + "".join(f"{E:>15}" for E in sizes[1:]))  # fmt: skip
        for mode in dict.fromkeys(r["mode"] for r in kernels):
            row = {r["members"]: r for r in kernels if r["mode"] == mode}
            cells = "".join(f"{row[E]['step']:>7.0f} + {row[E]['data']:<5.1f}" for E in sizes)
            lines.append(f"{'mode ' + mode:<14}{cells}".rstrip())
    return "\n".join(lines)


def format_overlap(speedups: dict | None) -> str:
    """Jobs side by side (``lab.bench_overlap``): per path, K jobs at once against one alone."""
    if not speedups:
        return "jobs side by side: measured on a GPU only (on a CPU they run one after another)"
    lines = ["jobs side by side, K at once: jobs per second against one alone"]
    for path, table in speedups.items():
        cells = ", ".join(f"K = {k}: {v:.2f}x" for k, v in table.items())
        lines.append(f"  {path:<6} {cells}")
    return "\n".join(lines)


#: what each profile's build does when no ``_build/bench.json`` is there
_WITHOUT_BENCH_FILE = {
    "smoke": "a bench of a few steps per measurement (seconds); its numbers only prove that the "
    "code runs",
    "quick": "the full bench on one thread (about a minute)",
    "paper": "the full bench on one thread (about a minute)",
}


def profile_note(profile: str) -> str:
    """What the build of ``profile`` (smoke, quick or paper) benches when there is no
    ``_build/bench.json``."""
    return f"without _build/bench.json: {_WITHOUT_BENCH_FILE[profile]}"


def bench_origin(results: dict, source: str) -> str:
    """``numbers from SOURCE, measured WHEN, bench profile 'P'`` of a bench result dict."""
    return (
        f"numbers from {source}, measured {results.get('created_utc', '?')}, "
        f"bench profile {results['profile']!r}"
    )


def format_products_floor(r: dict) -> str:
    """The products floor of a bench result dict: one line per product of an engine step
    (``products``: (shapes, GFLOP, ms)) with its GFLOP/s; their sum against the engine's step;
    and the step the reference's time over the speed-up target leaves, with the share of it
    the products alone take. A bench file without the floor gets a line saying so."""
    if "products_floor_ms" not in r:
        return (
            "Not measured: this bench file predates the products floor; run `make bench` again "
            "to time the eleven products of an engine step and fill this table."
        )
    eng_ms = 1e3 / r["engine_steps_per_s"]
    ref_ms = 1e3 / r["reference_steps_per_s"]
    floor_ms = r["products_floor_ms"]
    target = r["targets"]["engine_speedup"]
    budget_ms = ref_ms / target
    lines = [f"{'product (engine layout)':<46} {'GFLOP':>7} {'ms':>6} {'GFLOP/s':>8}"]
    for shapes, gflop, ms in r["products"]:
        lines.append(f"{shapes:<46} {gflop:>7.4f} {ms:>6.3f} {gflop / ms * 1e3:>8.1f}")
    lines.append(
        f"products alone: {floor_ms:.2f} ms, {100 * floor_ms / eng_ms:.0f}% of the engine's "
        f"step of {eng_ms:.2f} ms; the rest (elementwise work, data, optimiser): "
        f"{eng_ms - floor_ms:.2f} ms"
    )
    lines.append(
        f"{target:.0f}x the reference ({ref_ms:.2f} ms) leaves {budget_ms:.2f} ms per step: the "
        f"products alone take {100 * floor_ms / budget_ms:.0f}% of it (reference / floor = "
        f"{r['engine_speedup_bound']:.1f}x)"
    )
    return "\n".join(lines)


def format_subnormal(sub: dict | None) -> str:
    """The subnormal timing of a bench result dict (``subnormal``: members, n, T, entry,
    flushed_ms, subnormal_ms, slowdown): the two times, their ratio, and whether flushing saved
    time (a slowdown over 1.2x); None gets a line saying how to measure it."""
    if not sub:
        return (
            "Not measured: the quick teacher-identification run is not in the results cache; "
            "after `make book` has trained it, `make bench` times its students with and "
            "without subnormals here."
        )
    times = (
        f"{sub['members']} trained students (n = m = {sub['n']}, T = {sub['T']}, "
        f"{sub['entry']}): {sub['flushed_ms']:.2f} ms flushed, {sub['subnormal_ms']:.2f} ms "
        f"with subnormals: {sub['slowdown']:.1f}x"
    )
    saved = (
        "Flushing saved time here."
        if sub["slowdown"] > 1.2
        else "No slowdown from subnormals measured here (under 1.2x): flushing is a precaution "
        "on this machine."
    )
    return f"{times}\n{saved}"


def format_recorded_bench(name: str, rec: dict) -> str:
    """A recorded bench result dict (a GPU's): where and when it ran and from which commit, the
    command that ran it, ``format_table`` of it, and each speed-up against its target."""
    prov, hw = rec["provenance"], rec["hardware"]
    lines = [
        f"recorded bench {name!r}: {hw.get('device_name', hw['device'])}, host {hw['cpu']} "
        f"({hw['cpu_count']} cores), {rec['created_utc']}, commit {prov['commit'][:7]}",
        f"  {prov['run']}\n",
        format_table(rec),
        "",
    ]
    for key, target in rec["targets"].items():
        lines.append(f"{key} on that GPU: {rec[key]:.1f}x against a target of {target:.0f}x")
    return "\n".join(lines)


def engine_against_peak(r: dict) -> str:
    """The engine's time per step of a bench result dict against the time its matrix products
    (``step_gflop``) would take at the measured matrix peak (``gemm_peak_gflops``)."""
    step_ms = 1e3 / r["engine_steps_per_s"]
    peak_ms = 1e3 * r["step_gflop"] / r["gemm_peak_gflops"]
    return (
        f"engine: {step_ms:.1f} ms per step, of which the matrix products alone would take "
        f"{peak_ms:.1f} ms at the measured peak"
    )
