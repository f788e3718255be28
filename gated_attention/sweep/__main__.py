"""The command line of a sweep (``python -m gated_attention.sweep --help``; on a cluster:
book/reference.md, "Running the paper profile on a cluster"). ``--cache``: the results cache
(default $GATED_ATTENTION_CACHE, else ``results/``), with a scheduler on storage every worker
sees at the same path. Exit status 0 when every entry is written, 1 when the sweep failed (the
message says why), 2 for a wrong command line (an unknown experiment or profile).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from ..experiments.cache import CACHE_ENV
from ..experiments.profiles import PROFILES, check_profile
from ..experiments.registry import EXPERIMENTS, experiment_config
from . import DEFAULT_RETRIES, DEFAULT_TIMEOUT, SweepError, connect, sweep


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m gated_attention.sweep",
        description="Train experiments as jobs on a Dask cluster; write their results entries.",
        epilog=f"experiments: {', '.join(EXPERIMENTS)}",
    )
    p.add_argument("experiments", nargs="+", metavar="EXPERIMENT", help="one or more")
    p.add_argument("--profile", required=True, help=" | ".join(PROFILES))
    p.add_argument("--scheduler", help="tcp://HOST:PORT of a running scheduler")
    p.add_argument("--workers", type=int, help="local cluster: worker processes (default: cores)")
    p.add_argument("--gpu", action="store_true", help='jobs need resource GPU, train on "cuda"')
    p.add_argument("--cache", type=Path, help=f"results cache folder (default ${CACHE_ENV})")
    p.add_argument("--seeds", type=int, nargs="+", help="only these seeds")
    p.add_argument("--retries", type=int, default=DEFAULT_RETRIES, help="per failing job")
    p.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds to reach the scheduler"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.scheduler and args.workers is not None:
        parser.error("--workers sizes the local cluster; with --scheduler its workers run")
    try:
        check_profile(args.profile)
        unknown = [n for n in args.experiments if n not in EXPERIMENTS]
        if unknown:
            known = ", ".join(EXPERIMENTS)
            raise ValueError(f"unknown experiment {unknown[0]!r}; expected one of {known}")
    except ValueError as err:
        parser.error(str(err))
    if args.cache is not None:  # before the cluster starts: its workers inherit it
        os.environ[CACHE_ENV] = str(args.cache.resolve())
    device = "cuda" if args.gpu else "cpu"
    how = {"workers": args.workers, "gpu": args.gpu, "timeout": args.timeout}
    try:
        with connect(args.scheduler, **how) as c:

            def on_cluster(config: Any) -> Any:  # an entry a config reads, swept first
                (result,) = sweep([config], c, device=device, retries=args.retries)
                return result

            configs = [
                experiment_config(n, args.profile, resolve=on_cluster) for n in args.experiments
            ]
            if args.seeds:
                configs = [dataclasses.replace(x, seeds=tuple(args.seeds)) for x in configs]
            results = sweep(configs, c, device=device, retries=args.retries)
    except SweepError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for r in results:
        print(f"entry: {r.path} ({'cached' if r.cached else 'computed'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
