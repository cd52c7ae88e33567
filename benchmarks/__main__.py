"""Run every benchmark: `python -m benchmarks` (or `make bench`).

The training, Table 1 and refresh benchmarks read the materialized data lake: run
`make run` first. Results go to benchmarks/results/*.json; each also prints a table.
"""

import sys

from upath import UPath

from benchmarks import bm25, embedding, growth, parse, refresh, sampling, table1, training
from formula_assets import settings


def main() -> int:
    parse.run()
    embedding.run()
    growth.run([1, 10, 100], [1, 10], [1, 10])
    sampling.run()
    bm25.run()
    if not (UPath(settings.data_lake_url()) / "semantic_embeddings.parquet").exists():
        print("the data lake is not materialized: run `make run`, then benchmark again")
        return 1
    table1.run()
    training.run("default", workers=2, threads=1)  # the refresh's layout: 2 × 1 thread
    training.run("default", workers=1, threads=2)  # serial: one process, both cores
    refresh.run(["smoke", "default"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
