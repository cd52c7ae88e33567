"""Embedding assets as Arrow tables: one row per formula, a fixed-size float32 vector column."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from formula_assets.core.arrow import embedding_table, vector_column, with_aggregation
from formula_assets.semantics.cache import EmbeddingCache, EmbedStats, embed_texts
from formula_assets.semantics.models import Progress, TextEmbedder

AGGREGATIONS = ("sum", "mean")


def semantic_vectors(
    annotations: pa.Table,
    embedder: TextEmbedder,
    cache: EmbeddingCache | None,
    aggregation: str = "sum",
    progress: Progress | None = None,
) -> tuple[pa.Table, EmbedStats, list[str]]:
    """X_sem = Σ_j e(d_ij) per formula (or the mean). Formulae without any text are skipped."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    qids = annotations.column("qid").to_pylist()
    texts = annotations.column("texts").to_pylist()
    kept = [i for i, t in enumerate(texts) if t]
    skipped = [qids[i] for i, t in enumerate(texts) if not t]
    flat = [text for i in kept for text in texts[i]]
    matrix, stats = embed_texts(flat, embedder, cache, progress)
    counts = np.array([len(texts[i]) for i in kept], dtype=np.int64)
    if len(kept):
        offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
        summed = np.add.reduceat(matrix.astype(np.float64), offsets, axis=0)
        if aggregation == "mean":
            summed /= counts[:, None]
    else:
        summed = np.zeros((0, embedder.dimension))
    table = embedding_table(
        [qids[i] for i in kept],
        summed.astype(np.float32),
        num_texts=pa.array(counts.astype(np.int32)),
    )
    return with_aggregation(table, aggregation), stats, skipped


def opt_text_vectors(
    graphs: pa.Table,
    embedder: TextEmbedder,
    cache: EmbeddingCache | None,
    progress: Progress | None = None,
) -> tuple[pa.Table, EmbedStats]:
    """The sentence-transformer vector of each formula's linearised OPT."""
    qids = graphs.column("qid").to_pylist()
    matrix, stats = embed_texts(
        graphs.column("linearised_opt").to_pylist(), embedder, cache, progress
    )
    return embedding_table(qids, matrix), stats


def token_vectors(
    graphs: pa.Table,
    embedder: TextEmbedder,
    cache: EmbeddingCache | None,
    progress: Progress | None = None,
) -> tuple[pa.Table, EmbedStats]:
    """The sentence vector of every distinct OPT token's text (`x`, `frac`, `\\sin`, `=`):
    what the graph encoder knows of a symbol before any training, unseen ones included."""
    tokens = sorted({t for tokens in graphs.column("node_tokens").to_pylist() for t in tokens})
    matrix, stats = embed_texts(tokens, embedder, cache, progress)
    table = pa.table({"token": pa.array(tokens, pa.string()), "embedding": vector_column(matrix)})
    return table, stats
