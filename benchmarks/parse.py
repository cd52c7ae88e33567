"""Parse throughput: MathML → OPT graph rows, formulas per second on one core.

Target: ≥ 5,000 formulas/s. Measures `build_opt_graphs` (parsing plus flattening into the
`opt_graphs` columns: what the asset runs) over the snapshot and over synthetic corpora 10×
and 100× larger (recombined snapshot formulae), with the peak resident memory of each run.
"""

from __future__ import annotations

import argparse
import resource

from benchmarks.common import pin_to_one_core, print_table, repeat, summary, write_result
from benchmarks.synthetic import synthetic_records
from formula_assets.core.settings import Settings
from formula_assets.ingest.snapshot import read_snapshot_items
from formula_assets.syntax.opt import build_opt_graphs, parse_options

# the parser as the pipeline runs it (FORMULA_ASSETS_STYLED_LETTERS)
OPTIONS = parse_options(Settings.from_environment().styled_letters)

TARGET = 5000


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(runs: int = 7, scales: tuple[int, ...] = (1, 10, 100)) -> dict:
    pinning = pin_to_one_core()
    results, rows = {}, []
    for scale in scales:
        if scale == 1:
            items = read_snapshot_items()
            pairs = [(i["item"].rsplit("/", 1)[1], i["formula"]) for i in items]
        else:
            pairs = [(r.qid, r.mathml) for r in synthetic_records(scale)[0]]
        times = repeat(
            lambda pairs=pairs: build_opt_graphs(pairs, OPTIONS), runs if scale < 100 else 3
        )
        stats = summary(times)
        rate = len(pairs) / stats["median_s"]
        results[f"{scale}x"] = {
            "formulae": len(pairs),
            **stats,
            "formulas_per_second_median": round(rate),
            "peak_rss_mib_so_far": round(_peak_rss_mib(), 1),
        }
        rows.append(
            [
                f"{scale}×",
                f"{len(pairs):,}",
                f"{stats['median_s']:.3f}",
                round(rate),
                round(_peak_rss_mib(), 1),
            ]
        )
    snapshot_rate = results["1x"]["formulas_per_second_median"] if "1x" in results else 0
    result = {
        "pinning": pinning,
        "target_formulas_per_second": TARGET,
        "meets_target": snapshot_rate >= TARGET,
        "corpora": results,
    }
    print_table(
        f"Parse throughput (one core; target {TARGET:,}/s)",
        ["corpus", "formulae", "median s", "formulas/s", "peak RSS MiB"],
        rows,
    )
    path = write_result("parse", result)
    print(f"written {path}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    run(parser.parse_args().runs)
