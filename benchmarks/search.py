"""`formula-assets search` from a cold process (target ≤ 3 s per query on the reference
machine), and how often a held-out formula finds its own item.

Each query is a fresh `formula-assets search` process, as a user types it; median of `--runs`
per query, after one run that warms the file cache. The held-out quality is read from the
`search_index` asset: every test formula of a fold queries all items with that fold's models.
Needs the `default` lake of `make run`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from upath import UPath

from benchmarks.common import print_table, write_result
from formula_assets.core import lake
from formula_assets.core.protocol import DIRECTIONS
from formula_assets.core.settings import Settings
from formula_assets.search.layout import index_summary

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "formula-assets"
QUERIES = {
    "--latex 'F = m a'": ["--latex", "F = m a"],
    "--latex 'E = m c^2'": ["--latex", "E = m c^2"],
    "--text 'kinetic energy'": ["--text", "kinetic energy"],
    '--text "Ohm\'s law"': ["--text", "Ohm's law"],
}
TARGET_S = 3.0


def timed(arguments: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [str(CLI), "search", *arguments, "--top", "10"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return time.perf_counter() - started


def run(runs: int) -> dict:
    results = {}
    for name, arguments in QUERIES.items():
        timed(arguments)
        times = [timed(arguments) for _ in range(runs)]
        results[name] = {
            "median_s": round(statistics.median(times), 2),
            "min_s": round(min(times), 2),
            "max_s": round(max(times), 2),
            "runs": runs,
        }
    summary = index_summary(
        lake.read_parquet(UPath(Settings.from_environment().data_lake) / "search_index.parquet")
    )
    held_out = summary.get("held_out", {})
    print_table(
        f"search, fresh process per query (median of {runs}; target ≤ {TARGET_S:.0f} s)",
        ["query", "median", "min–max"],
        [
            [n, f"{r['median_s']:.2f} s", f"{r['min_s']:.2f}–{r['max_s']:.2f} s"]
            for n, r in results.items()
        ],
    )
    print_table(
        f"held-out items searching all {summary.get('items')} items (mean over folds)",
        ["method", *(f"{d} R@10 / MRR" for d in DIRECTIONS)],
        [
            [
                m,
                *(
                    f"{held_out[m][d]['recall_at_10']:.3f} / {held_out[m][d]['mrr']:.3f}"
                    for d in DIRECTIONS
                ),
            ]
            for m in held_out
        ],
    )
    payload = {
        "queries": results,
        "target_s": TARGET_S,
        "held_out": held_out,
        "items": summary.get("items"),
    }
    print(f"written {write_result('search', payload)}")
    return payload


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    run(parser.parse_args().runs)
