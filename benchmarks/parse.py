"""Parse throughput: snapshot MathML → OPT graph rows, formulas per second on one core.

Target: ≥ 5,000 formulas/s. Measures `build_opt_graphs`, i.e. parsing plus flattening into the
`opt_graphs` columns, which is what the asset runs.
"""

from __future__ import annotations

import argparse
import resource

from benchmarks.common import pin_to_one_core, print_table, repeat, summary, write_result
from formula_assets.opt import build_opt_graphs
from formula_assets.wikidata.snapshot import read_snapshot_items

TARGET = 5000


def run(runs: int = 7) -> dict:
    pinning = pin_to_one_core()
    items = read_snapshot_items()
    pairs = [(i["item"].rsplit("/", 1)[1], i["formula"]) for i in items]
    times = repeat(lambda: build_opt_graphs(pairs), runs)
    stats = summary(times)
    rate = len(pairs) / stats["median_s"]
    result = {
        "formulae": len(pairs),
        "pinning": pinning,
        **stats,
        "formulas_per_second_median": round(rate),
        "target_formulas_per_second": TARGET,
        "meets_target": rate >= TARGET,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print_table(
        "Parse throughput (snapshot, one core)",
        ["formulae", "median s", "formulas/s", "target", "peak RSS MiB"],
        [[len(pairs), f"{stats['median_s']:.3f}", round(rate), TARGET, result["peak_rss_mib"]]],
    )
    path = write_result("parse", result)
    print(f"written {path}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    run(parser.parse_args().runs)
