"""Table 1 wall time: correspondence metrics over the snapshot's real vectors.

Needs `semantic_embeddings` and `structural_embeddings` in the data lake (`make run`).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict

from upath import UPath

from benchmarks.common import print_table, write_result
from formula_assets.analysis.correspondence import CorrespondenceSettings, correspondence
from formula_assets.core import lake
from formula_assets.core.arrow import aligned_matrices
from formula_assets.core.settings import Settings


def run(runs: int = 3) -> dict:
    root = UPath(Settings.from_environment().data_lake)
    structural = lake.read_parquet(root / "structural_embeddings.parquet")
    semantic = lake.read_parquet(root / "semantic_embeddings.parquet")
    qids, x, y = aligned_matrices(structural, semantic)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        correspondence(x, y, CorrespondenceSettings())
        times.append(time.perf_counter() - started)
    median = sorted(times)[len(times) // 2]
    result = {
        "formulae": len(qids),
        "structural_dimensions": x.shape[1],
        "semantic_dimensions": y.shape[1],
        "settings": asdict(CorrespondenceSettings()),
        "median_s": round(median, 2),
        "runs": runs,
    }
    print_table(
        "Table 1 wall time (default settings: 1,000 permutations, 199 Mantel permutations)",
        ["formulae", "dims", "median s"],
        [[len(qids), f"{x.shape[1]} × {y.shape[1]}", result["median_s"]]],
    )
    print(f"written {write_result('table1', result)}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    run(parser.parse_args().runs)
