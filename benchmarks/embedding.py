"""Embedding throughput: texts/s cold (model encoding) vs. from the cache, on the snapshot.

Target: the cache ≥ 50× faster than encoding. Uses the packaged all-MiniLM-L6-v2 on CPU.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from upath import UPath

from benchmarks.common import print_table, write_result
from benchmarks.synthetic import synthetic_records
from formula_assets.ingest.records import records_to_table
from formula_assets.ingest.snapshot import snapshot_records
from formula_assets.semantics.annotations import build_annotations
from formula_assets.semantics.cache import EmbeddingCache, embed_texts
from formula_assets.semantics.models import TextEmbedder, resolve_model

NEW_ITEMS = 50


def _texts(records) -> list[str]:
    annotations = build_annotations(records_to_table(records).to_pylist())
    return [t for texts in annotations.column("texts").to_pylist() for t in texts]


def run(limit: int | None = None, cache_runs: int = 5) -> dict:
    formulae = list(snapshot_records())
    texts = _texts(formulae)
    distinct = list(dict.fromkeys(texts))[:limit]
    embedder = TextEmbedder(resolve_model(None, "benchmark"))
    started = time.perf_counter()
    embedder.encode(["warm-up"])
    load_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        cache = EmbeddingCache(UPath(folder), embedder.cache_identity, "semantic_embeddings")
        _, cold = embed_texts(distinct, embedder, cache)
        warm = []
        for _ in range(cache_runs):
            _, stats = embed_texts(distinct, embedder, cache)
            assert stats.embedded == 0
            warm.append(stats.seconds)
        # k new items (recombined formulae with new labels): only their new texts are embedded.
        records, _ = synthetic_records(2)
        new_items = records[len(formulae) : len(formulae) + NEW_ITEMS]
        new_texts = _texts(new_items)
        unseen = len(set(new_texts) - set(distinct))
        _, grown = embed_texts(distinct + new_texts, embedder, cache)
    warm_s = sorted(warm)[len(warm) // 2]
    result = {
        "texts": len(distinct),
        "model": embedder.spec.name,
        "model_load_s": round(load_s, 2),
        "cold_s": round(cold.seconds, 2),
        "cold_texts_per_s": round(len(distinct) / cold.seconds),
        "cache_s_median": round(warm_s, 4),
        "cache_texts_per_s": round(len(distinct) / warm_s),
        "speedup": round(cold.seconds / warm_s, 1),
        "target_speedup": 50,
        "new_items": NEW_ITEMS,
        "new_items_unseen_texts": unseen,
        "new_items_embedded": grown.embedded,
        "new_items_from_cache": grown.cached,
        "new_items_s": round(grown.seconds, 2),
    }
    print_table(
        "Embedding throughput (distinct snapshot annotation texts, CPU)",
        ["texts", "cold s", "cold texts/s", "cache s", "cache texts/s", "speed-up"],
        [
            [
                len(distinct),
                result["cold_s"],
                result["cold_texts_per_s"],
                result["cache_s_median"],
                result["cache_texts_per_s"],
                f"{result['speedup']}×",
            ]
        ],
    )
    print(
        f"after {NEW_ITEMS} new items: {grown.embedded} texts embedded ({unseen} unseen), "
        f"{grown.cached:,} from the cache, {grown.seconds:.2f} s"
    )
    print(f"written {write_result('embedding', result)}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="embed only the first N texts")
    run(parser.parse_args().limit)
