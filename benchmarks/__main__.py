"""Run every benchmark: `python -m benchmarks` (or `make bench`).

Each benchmark runs in a fresh process, so one's CPU pinning, imports and peak memory never
colour another's. The Table 1, training and growth benchmarks read the materialized data
lake: run `make run` first. Results go to benchmarks/results/*.json; each prints a table.
"""

import subprocess
import sys
import time

from upath import UPath

from formula_assets.core.settings import Settings

STEPS: list[list[str]] = [
    ["startup"],
    ["probe"],
    ["parse"],
    ["embedding"],
    ["engines"],
    ["growth", "--scales", "1", "10", "100", "--embed-scales", "1", "10"],
    ["sampling"],
    ["bm25"],
    ["table1"],
    ["training", "--profile", "default", "--workers", "2", "--threads", "1"],  # as refresh runs
    ["training", "--profile", "default", "--workers", "1", "--threads", "2"],  # serial
    ["training", "--profile", "smoke", "--workers", "2", "--threads", "1"],
    ["training", "--profile", "paper", "--epochs", "2", "--threads", "2"],  # full: a GPU's job
    ["search"],
    ["search_queries"],
    ["search_variants"],
    ["symbol_explanation"],
    ["serve"],
    ["serve", "--scale", "100"],  # builds the 100× lake once (7 min), then 24 GiB machines
    ["ann_recall"],
    ["pages"],
    ["audit"],
    ["refresh", "--profiles", "smoke", "default"],
    ["distributed", "--profile", "smoke"],
]


def main() -> int:
    if not (UPath(Settings.from_environment().data_lake) / "semantic_embeddings.parquet").exists():
        print("the data lake is not materialized: run `make run`, then benchmark again")
        return 1
    failed = []
    for step in STEPS:
        started = time.perf_counter()
        print(f"\n=== benchmarks.{' '.join(step)}", flush=True)
        code = subprocess.call([sys.executable, "-m", f"benchmarks.{step[0]}", *step[1:]])
        print(f"=== {step[0]}: exit {code} in {time.perf_counter() - started:.0f} s", flush=True)
        if code != 0:
            failed.append(" ".join(step))
    if failed:
        print("failed:", "; ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
