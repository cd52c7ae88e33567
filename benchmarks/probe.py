"""What the SPARQL change probe costs: rows and bytes of its one answer, and its wall time
against the local test endpoint, for the snapshot's items (1×) and a synthetic 10× corpus.

The endpoint here is `formula_assets_tests.support.sparql_server` (a real HTTP server); the time
covers the request, the JSON decoding, the row checks and the hash, plus the server's side.
It does not say how long WDQS takes to evaluate the query, which cannot be measured offline.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from benchmarks.common import print_table, write_result
from benchmarks.synthetic import synthetic_records
from formula_assets.ingest.probe import fingerprint
from formula_assets.ingest.snapshot import snapshot_records
from formula_assets.ingest.sparql import PROBE_VARIABLES, SparqlConfig
from formula_assets_tests.support.sparql_server import (
    FakeWdqs,
    probe_rows,
    snapshot_world,
    sparql_result,
)


def measure(scale: int, runs: int) -> dict[str, object]:
    records = list(snapshot_records()) if scale == 1 else synthetic_records(scale)[0]
    world = snapshot_world(records)
    answer = json.dumps(sparql_result(PROBE_VARIABLES, probe_rows(world))).encode("utf-8")
    with FakeWdqs(world) as server:
        config = SparqlConfig(server.endpoint, "formula_assets-benchmarks/1.0")
        seconds = []
        for _ in range(runs):
            started = time.perf_counter()
            found = fingerprint("sparql", sparql_config=config)
            seconds.append(time.perf_counter() - started)
    return {
        "scale": scale,
        "formula_items": found.metadata["items"],
        "concepts": found.metadata["concepts"],
        "rows": len(probe_rows(world)),
        "answer_bytes": len(answer),
        "answer_mb": round(len(answer) / 1e6, 2),
        "median_s": round(statistics.median(seconds), 3),
        "runs_s": [round(s, 3) for s in seconds],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = [measure(scale, args.runs) for scale in args.scales]
    print_table(
        "SPARQL change probe (one query)",
        ["scale", "formula items", "concepts", "rows", "answer MB", "median s"],
        [
            [
                f"{r['scale']}×",
                f"{r['formula_items']:,}",
                f"{r['concepts']:,}",
                f"{r['rows']:,}",
                r["answer_mb"],
                r["median_s"],
            ]
            for r in results
        ],
    )
    write_result("probe", {"results": results})


if __name__ == "__main__":
    main()
