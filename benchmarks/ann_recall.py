"""How often the inverted file (`search.ann`) returns the exact top, on the 100× lake.

For every hand-written query, in the space its channel scores it (names: the sentence vector
against the items' label and description vectors; meaning: the ensemble's query vector against
the items' vectors), the top 10 of the approximate search against the top 10 of every row
scored, with the time of each. The lake's vectors are sums of two snapshot items' vectors
(`benchmarks.serve_lake`), so their clusters are not those of real items: a measure of the
index on data of this size and dimension, not a promise about Wikidata's.

    python -m benchmarks.ann_recall [--scale 100] [--top 10]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from upath import UPath

from benchmarks.common import RESULTS, print_table, write_result
from benchmarks.search_queries import load_queries
from formula_assets.search.ann import InnerProductIndex
from formula_assets.search.meaning import MeaningSearcher, latex_to_mathml
from formula_assets.search.names import NameIndex
from formula_assets.search.searcher import _table


def exact_top(index: InnerProductIndex, query: np.ndarray, top: int) -> set[int]:
    """The caller's rows of the `top` best scores over every stored row."""
    scores = index.matrix @ query
    if index.bias is not None:
        scores = scores + index.bias
    best = np.argpartition(-scores, top - 1)[:top]
    return {int(index.members[b]) for b in best}


def approximate_top(index: InnerProductIndex, query: np.ndarray, top: int) -> set[int]:
    found = index.search(query)
    best = np.argpartition(-found.scores, top - 1)[:top]
    return {int(found.rows[b]) for b in best}


def compare(pairs: list[tuple[InnerProductIndex, np.ndarray]], top: int) -> dict[str, float]:
    recalls, exact_ms, approximate_ms = [], [], []
    for index, query in pairs:
        started = time.perf_counter()
        approximate = approximate_top(index, query, top)
        approximate_ms.append(1000 * (time.perf_counter() - started))
        started = time.perf_counter()
        exact = exact_top(index, query, top)
        exact_ms.append(1000 * (time.perf_counter() - started))
        recalls.append(len(exact & approximate) / top)
    return {
        "queries": len(pairs),
        "recall": round(statistics.fmean(recalls), 3),
        "all_found": round(sum(r == 1.0 for r in recalls) / len(recalls), 3),
        "approximate_ms": round(statistics.median(approximate_ms), 2),
        "exact_ms": round(statistics.median(exact_ms), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=100, choices=[10, 100])
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from benchmarks.serve_lake import build

    root = UPath(str(build(args.scale, RESULTS / f"lake_{args.scale}x")))
    queries = load_queries()
    meaning = MeaningSearcher(root, offline=True)
    meaning.compact()
    names = NameIndex(_table(root, "name_index"))
    texts = [q["query"] for q in queries if q["kind"] == "text"]
    formulae = [latex_to_mathml(q["query"]) for q in queries if q["kind"] != "text"]
    channels = {
        "names (dense)": [(names.dense, meaning.sentence(t)) for t in texts],
        "meaning, text queries": [meaning.query_in_space(t, "text") for t in texts],
        "meaning, formula queries": [meaning.query_in_space(f, "mathml") for f in formulae],
    }
    results = {name: compare(pairs, args.top) for name, pairs in channels.items()}
    rows = [
        [
            name,
            f"{len(pairs[0][0])} × {pairs[0][0].matrix.shape[1]}",
            r["queries"],
            r["recall"],
            r["all_found"],
            f"{r['approximate_ms']} / {r['exact_ms']}",
        ]
        for (name, pairs), r in zip(channels.items(), results.values(), strict=True)
    ]
    print_table(
        f"the inverted file against every row, top {args.top}, {args.scale}× the snapshot",
        ["channel", "rows × dimensions", "queries", f"recall@{args.top}",
         "all found", "median ms: inverted file / every row"],
        rows,
    )  # fmt: skip
    write_result(f"ann_recall_{args.scale}x", {"scale": args.scale, "top": args.top, **results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
