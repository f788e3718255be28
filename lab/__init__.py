"""The lab: what measures or plans hardware, run from the repository (``python -m lab.<name>``),
never installed with the package (``pip install .`` installs ``gated_attention`` only).

bench           time the training engine (``make bench``), with its parts:
  bench_products  the matrix products of one step, counted and timed alone
  bench_timing    how the bench times (torch.utils.benchmark, fastest of several runs)
  bench_ways      the ways a step could be made faster, each measured (none adopted), with
    quadratic_gating  the input gating as one product on the pairs of inputs (way (f))
    inplace_scan      the recurrence as an in-place scan over t, no decay matrix (way (g))
  step_profile    where one step's time goes, part by part
  family_bench    a step of each model family at a matched parameter count
  bench_overlap   jobs side by side on one device: K at once against one alone
  bench_table     the bench's results as plain-text tables
  bench_plots     the bench's results as figures
cpu_plan        the CPU budget's runs not yet recorded, and one command that trains them
gpu_plan        the paper-profile runs not yet recorded, predicted on one GPU, with
  device_time     a step's device time from its counted kernels and FLOPs
  probe           what a job would train: its first ``train`` call, stopped there
  plan_text       the plan in words: its table and the bounds under its total
  own_sizes       every member at its own size: the floor under that time
  kept_counts     the counted steps kept between calls: each counted (and compiled) once
  step_times      the same steps timed where they run: the check of that prediction
    busy_time     how much of such a step the device's kernels take, and which
  tf32_check      a run's held-out losses with TF32 products, emulated here: may a GPU use them?
gpu_checks      a lent GPU's first call: its CUDA tests, the step times not recorded, its bench
campaign        train the unrecorded paper runs within a time budget, central claims first
"""
