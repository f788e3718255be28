"""Command lines and build glue: ``python -m gated_attention.tools.<name>``.

cli             ``python -m gated_attention``: list the experiments, run one with overrides
book            execute the chapters with papermill, write plain notebooks
record          run an experiment in a profile and ship it as a recorded run
quick_runs      the quick runs that ship recorded: is their training code unchanged? re-record
cpu_plan        the CPU budget's runs not yet recorded, and one command that trains them
gpu_plan        the paper-profile runs not yet recorded, predicted on one GPU, with
  device_time     a step's device time from its counted kernels and FLOPs
  plan_text       the plan in words: its table and the bounds under its total
  own_sizes       every member at its own size: the floor under that time
  kept_counts     the counted steps kept between calls: each counted (and compiled) once
  step_times      the same steps timed where they run: the check of that prediction
    busy_time     how much of such a step the device's kernels take, and which
  tf32_check      a run's held-out losses with TF32 products, emulated here: may a GPU use them?
gpu_checks      a lent GPU's first call: its CUDA tests, the step times not recorded, its bench
campaign        train them within a time budget, central claims first, as a resumable pack
bench           time the training engine (``make bench``), with its parts:
  bench_products  the matrix products of one step, counted and timed alone
  bench_timing    how the bench times (fastest of several runs, in turns)
  bench_ways      the ways a step could be made faster, each measured, with
    quadratic_gating  the input gating as one product on the pairs of inputs (way (f))
    inplace_scan      the recurrence as an in-place scan over t, no decay matrix (way (g))
  step_profile    where one step's time goes, part by part
  family_bench    a step of each model family at a matched parameter count
  bench_overlap   jobs side by side on one device: K at once against one alone
sphinxext       the Sphinx extension of the rendered book
launch_links    where the book's launch buttons go (Binder, Colab)
browser_check   what the browser check of the built pages reads and counts as a problem (its
                tests: tests/browser/test_pages.py, ``make browser``), with
  browser_setup   find or install the Chromium it runs in
chapter_lint    the chapters' code fits the rendered column
workflow_lint   lint the GitHub Actions workflows
"""
