"""How each stage's time and memory grow from 1× to 10× to 100× the snapshot.

Corpora come from `benchmarks.synthetic`. Stages: parsing (MathML → OPT rows), annotation
texts, WL-SVD structural vectors, Table 1 (correspondence), one fold of Table 2 retrieval
(cosine ranking of 4 methods + BM25 both ways over the fold's candidates), one training epoch
per method, and sentence embedding (1× and 10× only: at ~300 texts/s on this CPU, 100× would
take hours; the cost per text is constant). Semantic vectors of synthetic items are the sum
of their two source items' vectors, so Table 1 runs on realistic inputs without re-embedding.
Peak memory: Python/NumPy allocations traced by tracemalloc in a second pass.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
from upath import UPath

from benchmarks.common import print_table, write_result
from benchmarks.synthetic import synthetic_records
from formula_assets import lake, settings
from formula_assets.annotations import build_annotations
from formula_assets.bm25 import bm25_scores
from formula_assets.correspondence import correspondence
from formula_assets.embedding_tables import embedding_matrix
from formula_assets.opt import build_opt_graphs
from formula_assets.retrieval_metrics import gold_ranks_from_scores, normalise_rows
from formula_assets.structural import structural_embeddings
from formula_assets.wikidata import records_to_table


def measure(fn: Callable[[], object], memory: bool = True) -> tuple[float, float | None, object]:
    """(seconds, peak traced MiB or None, result)."""
    started = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - started
    peak = None
    if memory:
        tracemalloc.start()
        fn()
        _, peak_bytes = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        peak = peak_bytes / 2**20
    return seconds, peak, result


def _semantic(parents: np.ndarray) -> np.ndarray:
    path = UPath(settings.data_lake_url()) / "semantic_embeddings.parquet"
    if path.exists():
        _, base = embedding_matrix(lake.read_parquet(path))
    else:  # no materialized lake: random vectors keep the shapes honest, not the values
        base = np.random.default_rng(0).normal(size=(1758, 384)).astype(np.float32)
    return base[parents[:, 0]] + np.where(
        (parents[:, 0] != parents[:, 1])[:, None], base[parents[:, 1]], 0
    )


def _retrieval_fold(graphs, semantic_texts, structural, semantic) -> float:
    """One fold of Table 2: 4 cosine methods + BM25 both ways over a fifth of the corpus."""
    n = len(structural) // 5
    s, m = normalise_rows(structural[:n]), normalise_rows(semantic[:n, : structural.shape[1]])
    started = time.perf_counter()
    for _ in range(4):
        gold_ranks_from_scores(s @ m.T)
    opt = graphs["linearised_opt"].to_pylist()[:n]
    texts = semantic_texts[:n]
    gold_ranks_from_scores(bm25_scores(opt, texts))
    gold_ranks_from_scores(bm25_scores(texts, opt))
    return time.perf_counter() - started


def _epoch(graphs, semantic, method: str) -> float:
    import dataclasses

    import torch

    from formula_assets.profiles import get_profile
    from formula_assets.training.methods import AlignmentData, train_fold

    torch.set_num_threads(1)
    qids = graphs["qid"].to_pylist()
    folds = {q: 1 + i % 5 for i, q in enumerate(qids)}
    data = AlignmentData(
        qids, graphs, semantic.astype(np.float32), semantic.astype(np.float32), folds
    )
    profile = get_profile("default")
    one = dataclasses.replace(profile.settings(method), epochs=1, patience=1)
    profile = dataclasses.replace(profile, **{method: one})
    model = train_fold(method, 1, data, profile)
    return model.history[0]["seconds"]


def _embedding(texts: list[str]) -> float:
    from formula_assets.embedding import TextEmbedder, resolve_model

    embedder = TextEmbedder(resolve_model(None, "benchmark"))
    embedder.encode(["warm-up"])
    started = time.perf_counter()
    embedder.encode(texts)
    return time.perf_counter() - started


def _scale(scale: int, embed: bool, train: bool) -> dict:
    records, parents = synthetic_records(scale)
    pairs = [(r.qid, r.mathml) for r in records]
    parse_s, parse_mb, built = measure(lambda: build_opt_graphs(pairs), memory=scale <= 10)
    graphs = built.graphs
    rows = records_to_table(records).to_pylist()
    annotate_s, annotate_mb, annotations = measure(lambda: build_annotations(rows))
    wl_s, wl_mb, structural = measure(lambda: structural_embeddings(graphs), memory=scale <= 10)
    semantic = _semantic(parents)
    corr_s, _, _ = measure(lambda: correspondence(structural, semantic), memory=False)
    texts = [" ".join(t) for t in annotations["texts"].to_pylist()]
    entry = {
        "formulae": len(records),
        "parse_s": parse_s,
        "parse_peak_mib": parse_mb,
        "annotations_s": annotate_s,
        "annotations_peak_mib": annotate_mb,
        "wl_svd_s": wl_s,
        "wl_svd_peak_mib": wl_mb,
        "table_1_s": corr_s,
        "retrieval_fold_s": _retrieval_fold(graphs, texts, structural, semantic),
    }
    if embed:
        distinct = list(dict.fromkeys(t for ts in annotations["texts"].to_pylist() for t in ts))
        entry["embedding_texts"] = len(distinct)
        entry["embedding_s"] = _embedding(distinct)
    if train:
        entry["epoch_sbert_dual_cl_s"] = _epoch(graphs, semantic, "sbert_dual_cl")
        entry["epoch_graph_text_cl_s"] = _epoch(graphs, semantic, "graph_text_cl")
    return entry


def _cell(entry: dict, key: str, digits: int = 1) -> str:
    value = entry.get(key)
    return "—" if value is None else f"{value:.{digits}f}"


def run(scales: list[int], embed_scales: list[int], train_scales: list[int]) -> dict:
    results, rows = {}, []
    for scale in scales:
        entry = _scale(scale, scale in embed_scales, scale in train_scales)
        results[f"{scale}x"] = entry
        print(f"{scale}×: {entry}", flush=True)
        rows.append(
            [f"{scale}×", f"{entry['formulae']:,}"]
            + [
                _cell(entry, k)
                for k in ("parse_s", "annotations_s", "wl_svd_s", "table_1_s", "retrieval_fold_s")
            ]
            + [_cell(entry, "embedding_s", 0), _cell(entry, "epoch_graph_text_cl_s")]
        )
    header = [
        "scale",
        "formulae",
        "parse",
        "annotations",
        "WL-SVD",
        "Table 1",
        "Table 2 fold",
        "embedding",
        "graph epoch",
    ]
    print_table("Growth (seconds)", header, rows)
    print(f"written {write_result('growth', {'scales': results})}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--embed-scales", type=int, nargs="*", default=[1, 10])
    parser.add_argument("--train-scales", type=int, nargs="*", default=[1, 10])
    args = parser.parse_args()
    run(args.scales, args.embed_scales, args.train_scales)
