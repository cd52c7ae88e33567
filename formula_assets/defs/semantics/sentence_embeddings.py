"""`semantic_embeddings`, `opt_text_embeddings` and `opt_token_embeddings`: sentence-transformer
vectors of each formula's annotation texts (summed, the paper's X_sem), of its linearised
OPT, and of every OPT token's text.

All embed with the same model, through the same cache; the model named by the settings is
part of their code version (`semantics.models` declares it), and its files' content is their
upstream `sentence_model` (an observable source), so a model changed in place makes them stale.
"""

import dagster as dg
import pyarrow as pa
from pydantic import Field

from formula_assets.core.arrow import with_expected_dimension, with_model
from formula_assets.core.hashing import table_content_hash
from formula_assets.defs.checks import vectors_valid_check
from formula_assets.defs.metadata import step_cost
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource
from formula_assets.semantics.models import ProgressLog
from formula_assets.semantics.tables import opt_text_vectors, semantic_vectors, token_vectors

SENTENCE_MODEL = "sentence_model"  # the observable source of the model's identity


class EmbeddingConfig(dg.Config):
    model: str | None = Field(
        default=None,
        description="sentence-transformers id or local folder. Default: "
        "FORMULA_ASSETS_EMBEDDING_MODEL, else the packaged all-MiniLM-L6-v2. "
        "The paper used sentence-transformers/all-mpnet-base-v2.",
    )


class SemanticEmbeddingConfig(EmbeddingConfig):
    aggregation: str = Field(
        default="sum", description="sum (the paper's X_sem = Σ e) or mean of the text vectors."
    )


def _output(table: pa.Table, embedder, stats, **metadata: object) -> dg.Output:
    """The vectors, marked with the model that made them and the width the checks expect."""
    table = with_expected_dimension(table, embedder.dimension)
    table = with_model(table, embedder.spec.name, embedder.spec.identity)
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={**_embedding_metadata(embedder, stats, table), **metadata},
    )


def _embedding_metadata(embedder, stats, table: pa.Table) -> dict:
    return {
        "model": embedder.spec.name,
        "model_identity": embedder.spec.identity,
        "model_origin": embedder.spec.origin,
        "dimension": embedder.dimension,
        "texts": stats.texts,
        "distinct_texts": stats.distinct,
        "from_cache": stats.cached,
        "newly_embedded": stats.embedded,
        "seconds": round(stats.seconds, 2),
        "formulae": table.num_rows,
    }


@dg.asset(
    group_name="semantics",
    deps=[SENTENCE_MODEL],
    kinds={"pytorch", "parquet"},
    metadata=step_cost(2.0),
)
def semantic_embeddings(
    context: dg.AssetExecutionContext,
    config: SemanticEmbeddingConfig,
    sentence_embedder: SentenceEmbedderResource,
    concept_annotations: pa.Table,
):
    """X_sem per formula: the sum of its annotation texts' sentence-transformer vectors."""
    embedder = sentence_embedder.embedder(config.model)
    cache = sentence_embedder.cache(embedder, "semantic_embeddings", context.log.warning)
    table, stats, skipped = semantic_vectors(
        concept_annotations,
        embedder,
        cache,
        config.aggregation,
        ProgressLog(context.log.info, "embedding annotation texts"),
    )
    if skipped:
        context.log.warning(f"{len(skipped)} formulae have no annotation text: {skipped[:10]}")
    context.log.info(
        f"{stats.embedded:,} texts embedded, {stats.cached:,} from cache, {stats.seconds:.1f} s"
    )
    return _output(
        table, embedder, stats, aggregation=config.aggregation, without_texts=len(skipped)
    )


@dg.asset(
    group_name="semantics",
    deps=[SENTENCE_MODEL],
    kinds={"pytorch", "parquet"},
    metadata=step_cost(2.0),
)
def opt_text_embeddings(
    context: dg.AssetExecutionContext,
    config: EmbeddingConfig,
    sentence_embedder: SentenceEmbedderResource,
    opt_graphs: pa.Table,
):
    """The sentence-transformer vector of each linearised OPT, for the dual-encoder baselines."""
    embedder = sentence_embedder.embedder(config.model)
    cache = sentence_embedder.cache(embedder, "opt_text_embeddings", context.log.warning)
    table, stats = opt_text_vectors(
        opt_graphs, embedder, cache, ProgressLog(context.log.info, "embedding linearised OPTs")
    )
    return _output(table, embedder, stats)


@dg.asset(
    group_name="semantics",
    deps=[SENTENCE_MODEL],
    kinds={"pytorch", "parquet"},
    metadata=step_cost(1.0),
)
def opt_token_embeddings(
    context: dg.AssetExecutionContext,
    config: EmbeddingConfig,
    sentence_embedder: SentenceEmbedderResource,
    opt_graphs: pa.Table,
):
    """The sentence-transformer vector of every distinct OPT token's text: the graph
    encoder's prior knowledge of a symbol, for tokens training never saw too."""
    embedder = sentence_embedder.embedder(config.model)
    cache = sentence_embedder.cache(embedder, "opt_token_embeddings", context.log.warning)
    table, stats = token_vectors(
        opt_graphs, embedder, cache, ProgressLog(context.log.info, "embedding OPT tokens")
    )
    return _output(table, embedder, stats, tokens=table.num_rows)


semantic_embeddings_valid = vectors_valid_check(semantic_embeddings, "model's")
opt_text_embeddings_valid = vectors_valid_check(opt_text_embeddings, "model's")
opt_token_embeddings_valid = vectors_valid_check(opt_token_embeddings, "model's")
