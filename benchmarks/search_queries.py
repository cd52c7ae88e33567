"""Search measured on queries as people write them: `benchmarks/data/search_queries.jsonl`
(hand-written, split into a tuning and a test part before any tuning).

For each query kind (text, LaTeX): success@1, success@10 and MRR of the first expected item,
with every channel, and with each channel left out. Reports the test part unless `--part
tuning` (the part the fusion weights were chosen on). Needs the `default` lake of `make run`.

    python -m benchmarks.search_queries [--part test|tuning]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from upath import UPath

from benchmarks.common import print_table, write_result
from formula_assets.core.settings import Settings
from formula_assets.search.fusion import CHANNELS
from formula_assets.search.searcher import LATEX, TEXT, Searcher
from formula_assets.syntax.opt import parse_options

QUERIES = Path(__file__).resolve().parent / "data" / "search_queries.jsonl"
DEPTH = 100  # ranks beyond it count as not found


def load_queries(part: str | None = None) -> list[dict]:
    rows = [json.loads(line) for line in QUERIES.read_text(encoding="utf-8").splitlines() if line]
    return [q for q in rows if part is None or q["part"] == part]


def searcher(channels: Iterable[str] = CHANNELS, **kwargs) -> Searcher:
    settings = Settings.from_environment()
    return Searcher(
        UPath(settings.data_lake),
        options=parse_options(settings.styled_letters),
        model_dir=settings.model_dir,
        offline=settings.hf_hub_offline,
        channels=channels,
        **kwargs,
    )


def rank_of(search: Searcher, query: dict) -> int:
    """The rank of the first expected item (DEPTH + 1: not within DEPTH)."""
    kind = TEXT if query["kind"] == TEXT else LATEX
    found = search.search(query["query"], kind, top=DEPTH).hits
    expected = set(query["expected"])
    return next((h.rank for h in found if h.qid in expected), DEPTH + 1)


def figures(ranks: list[int]) -> dict[str, float]:
    values = np.array(ranks, dtype=np.float64)
    return {
        "queries": len(ranks),
        "success_at_1": round(float(np.mean(values <= 1)), 3),
        "success_at_10": round(float(np.mean(values <= 10)), 3),
        "mrr": round(float(np.mean(1.0 / values)), 3),
    }


def measure(search: Searcher, queries: list[dict]) -> tuple[dict[str, dict], dict[str, int]]:
    ranks: dict[str, list[int]] = {}
    each: dict[str, int] = {}
    for query in queries:
        rank = rank_of(search, query)
        each[query["id"]] = rank
        ranks.setdefault(query["kind"], []).append(rank)
    return {kind: figures(r) for kind, r in ranks.items()}, each


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["test", "tuning"], default="test")
    args = parser.parse_args()
    queries = load_queries(args.part)
    results: dict[str, dict] = {}
    ranks: dict[str, dict[str, int]] = {}
    started = time.perf_counter()
    for left_out in (None, *CHANNELS):
        channels = [c for c in CHANNELS if c != left_out]
        name = "all channels" if left_out is None else f"without {left_out}"
        results[name], ranks[name] = measure(searcher(channels), queries)
    seconds = time.perf_counter() - started
    rows = []
    for name, by_kind in results.items():
        for kind, f in sorted(by_kind.items()):
            rows.append([name, kind, f["queries"], f["success_at_1"], f["success_at_10"], f["mrr"]])
    print_table(
        f"hand-written queries, {args.part} part",
        ["channels", "kind", "queries", "success@1", "success@10", "MRR"],
        rows,
    )
    if args.part == "tuning":  # the test part's misses are not shown: nobody tunes on them
        missed = [
            f"{q['id']} ({q['kind']}, {q['style']}) rank {ranks['all channels'][q['id']]}: "
            f"{q['query']}"
            for q in queries
            if ranks["all channels"][q["id"]] > 1
        ]
        print(f"not first with all channels ({len(missed)}):")
        for line in missed:
            print("  " + line)
    write_result(
        f"search_queries_{args.part}",
        {"part": args.part, "results": results, "ranks": ranks, "seconds": round(seconds, 1)},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
