"""How each stage's time and memory grow from 1× to 10× to 100× the snapshot.

Corpora come from `benchmarks.synthetic`. Stages: parsing (MathML → OPT rows), annotation
texts, WL-SVD structural vectors, Table 1 (correspondence), one fold of Table 2 retrieval
(cosine ranking of 4 methods + BM25 both ways over the fold's candidates), one training epoch
per method, and sentence embedding (1× and 10× only: at ~300 texts/s on this CPU, 100× would
take hours; the cost per text is constant). Semantic vectors of synthetic items are the sum
of their two source items' vectors, so Table 1 runs on realistic inputs without re-embedding.
Memory: each scale runs in a fresh process; after each stage the process's peak resident
set (ru_maxrss, which only grows) is recorded, so a stage's entry is the peak so far.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np
import pyarrow.compute as pc
from upath import UPath

from benchmarks.common import print_table, write_result
from benchmarks.synthetic import synthetic_records
from formula_assets.analysis.correspondence import correspondence
from formula_assets.core import lake
from formula_assets.core.arrow import embedding_matrix
from formula_assets.core.settings import Settings
from formula_assets.evaluation.bm25 import bm25_scorer
from formula_assets.evaluation.ranking import DotScorer, gold_ranks, normalise_rows
from formula_assets.graphs.training_free import structural_embeddings
from formula_assets.ingest.records import records_to_table
from formula_assets.semantics.annotations import build_annotations
from formula_assets.syntax.opt import build_opt_graphs, parse_options

# the parser as the pipeline runs it (FORMULA_ASSETS_STYLED_LETTERS)
OPTIONS = parse_options(Settings.from_environment().styled_letters)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(fn: Callable[[], object]) -> tuple[float, float, object]:
    """(seconds, peak RSS MiB of the process so far, result)."""
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, _rss_mib(), result


def _semantic(parents: np.ndarray) -> np.ndarray:
    path = UPath(Settings.from_environment().data_lake) / "semantic_embeddings.parquet"
    if path.exists():
        _, base = embedding_matrix(lake.read_parquet(path))
    else:  # no materialized lake: random vectors keep the shapes honest, not the values
        base = np.random.default_rng(0).normal(size=(1758, 384)).astype(np.float32)
    return base[parents[:, 0]] + np.where(
        (parents[:, 0] != parents[:, 1])[:, None], base[parents[:, 1]], 0
    )


def _retrieval_fold(graphs, semantic_texts, structural, semantic) -> None:
    """One fold of Table 2: 4 cosine methods + BM25 both ways over a fifth of the corpus,
    ranked in chunks as the evaluation does."""
    n = len(structural) // 5
    s, m = normalise_rows(structural[:n]), normalise_rows(semantic[:n, : structural.shape[1]])
    for _ in range(4):
        gold_ranks(DotScorer(s, m))
    opt = graphs["linearised_opt"].to_pylist()[:n]
    texts = semantic_texts[:n]
    gold_ranks(bm25_scorer(opt, texts))
    gold_ranks(bm25_scorer(texts, opt))


def _epoch(graphs, semantic, method: str) -> float:
    import dataclasses

    import torch

    from formula_assets.core.profiles import get_profile
    from formula_assets.methods import registry
    from formula_assets.training.data import AlignmentData
    from formula_assets.training.fold import train_fold

    torch.set_num_threads(1)
    qids = graphs["qid"].to_pylist()
    folds = {q: 1 + i % 5 for i, q in enumerate(qids)}
    data = AlignmentData(
        qids, graphs, semantic.astype(np.float32), semantic.astype(np.float32), folds
    )
    profile = get_profile("default")
    one = dataclasses.replace(profile.settings(method), epochs=1, patience=1)
    profile = dataclasses.replace(profile, **{method: one})
    model = train_fold(registry.trained_method(method), 1, data, profile)
    return model.history[0]["seconds"]


def _embedding(texts: list[str]) -> float:
    from formula_assets.semantics.models import TextEmbedder, resolve_model

    embedder = TextEmbedder(resolve_model(None, "benchmark"))
    embedder.encode(["warm-up"])
    started = time.perf_counter()
    embedder.encode(texts)
    return time.perf_counter() - started


def _scale(scale: int, embed: bool, train: bool) -> dict:
    records, parents = synthetic_records(scale)
    pairs = [(r.qid, r.mathml) for r in records]
    inputs_mb = _rss_mib()
    parse_s, parse_mb, built = measure(lambda: build_opt_graphs(pairs, OPTIONS))
    graphs = built.graphs
    rows = records_to_table(records).to_pylist()
    annotate_s, annotate_mb, annotations = measure(lambda: build_annotations(rows))
    wl_s, wl_mb, structural = measure(lambda: structural_embeddings(graphs))
    semantic = _semantic(parents)
    corr_s, corr_mb, _ = measure(lambda: correspondence(structural, semantic))
    texts = [" ".join(t) for t in annotations["texts"].to_pylist()]
    retrieval_s, retrieval_mb, _ = measure(
        lambda: _retrieval_fold(graphs, texts, structural, semantic)
    )
    entry = {
        "formulae": len(records),
        "nodes": int(pc.sum(graphs["num_nodes"]).as_py()),
        "rss_inputs_mib": inputs_mb,
        "parse_s": parse_s,
        "rss_after_parse_mib": parse_mb,
        "annotations_s": annotate_s,
        "rss_after_annotations_mib": annotate_mb,
        "wl_svd_s": wl_s,
        "rss_after_wl_svd_mib": wl_mb,
        "table_1_s": corr_s,
        "rss_after_table_1_mib": corr_mb,
        "retrieval_fold_s": retrieval_s,
        "rss_after_retrieval_mib": retrieval_mb,
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


def _scale_in_subprocess(scale: int, embed: bool, train: bool) -> dict:
    """Each scale in a fresh process, so its peak memory is its own."""
    command = [sys.executable, "-m", "benchmarks.growth", "--one", str(scale)]
    command += ["--embed"] if embed else []
    command += ["--train"] if train else []
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def run(scales: list[int], embed_scales: list[int], train_scales: list[int]) -> dict:
    results, rows = {}, []
    for scale in scales:
        entry = _scale_in_subprocess(scale, scale in embed_scales, scale in train_scales)
        results[f"{scale}x"] = entry
        print(f"{scale}×: {entry}", flush=True)
        rows.append(
            [f"{scale}×", f"{entry['formulae']:,}"]
            + [
                _cell(entry, k)
                for k in ("parse_s", "annotations_s", "wl_svd_s", "table_1_s", "retrieval_fold_s")
            ]
            + [_cell(entry, "embedding_s", 0), _cell(entry, "epoch_graph_text_cl_s")]
            + [_cell(entry, "rss_after_retrieval_mib", 0)]
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
        "peak RSS MiB",
    ]
    print_table("Growth (seconds)", header, rows)
    print(f"written {write_result('growth', {'scales': results})}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--embed-scales", type=int, nargs="*", default=[1, 10])
    parser.add_argument("--train-scales", type=int, nargs="*", default=[1, 10])
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child: one scale
    parser.add_argument("--embed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--train", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(_scale(args.one, args.embed, args.train)))
    else:
        run(args.scales, args.embed_scales, args.train_scales)
