"""Group `semantics`: annotation texts and their sentence-transformer embeddings (paper §3.2)."""

import dagster as dg
import pyarrow as pa
from pydantic import Field

from formula_assets import annotations, embedding, embedding_cache, embedding_tables, settings
from formula_assets.defs.automation import AUTOMATION
from formula_assets.defs.metadata import preview
from formula_assets.defs.outcomes import check_result
from formula_assets.defs.resources import SentenceEmbedderResource
from formula_assets.embedding import DEFAULT_MODEL_NAME, ProgressLog
from formula_assets.embedding_tables import opt_text_vectors, semantic_vectors, with_model
from formula_assets.hashing import table_content_hash
from formula_assets.quality import vectors_valid, with_expected_dimension
from formula_assets.versioning import code_version

ANNOTATION_VERSION = code_version(annotations)
# The model named by the environment at load time is part of the version: changing
# FORMULA_ASSETS_EMBEDDING_MODEL makes the embeddings stale.
MODEL_SETTING = settings.embedding_model()[0] or DEFAULT_MODEL_NAME
EMBEDDING_VERSION = code_version(embedding, embedding_cache, embedding_tables, MODEL_SETTING)
SEMANTIC_VERSION = code_version(
    annotations, embedding, embedding_cache, embedding_tables, MODEL_SETTING
)
OWNERS = ["team:formula-assets"]


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


@dg.asset(
    group_name="semantics",
    code_version=ANNOTATION_VERSION,
    automation_condition=AUTOMATION,
    kinds={"python", "parquet"},
    owners=OWNERS,
)
def concept_annotations(context: dg.AssetExecutionContext, wikidata_formulae: pa.Table):
    """Each formula's distinct annotation texts: item and concept labels and descriptions."""
    table = annotations.build_annotations(wikidata_formulae.to_pylist())
    counts = table.column("num_texts").to_pylist()
    distinct = {t for texts in table.column("texts").to_pylist() for t in texts}
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            "formulae": table.num_rows,
            "texts": sum(counts),
            "distinct_texts": len(distinct),
            "without_texts": sum(1 for c in counts if c == 0),
            "preview": preview(table, ["qid", "num_texts", "texts"]),
        },
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
    code_version=SEMANTIC_VERSION,
    automation_condition=AUTOMATION,
    kinds={"pytorch", "parquet"},
    owners=OWNERS,
)
def semantic_embeddings(
    context: dg.AssetExecutionContext,
    config: SemanticEmbeddingConfig,
    sentence_embedder: SentenceEmbedderResource,
    concept_annotations: pa.Table,
):
    """X_sem per formula: the sum of its annotation texts' sentence-transformer vectors."""
    embedder = sentence_embedder.embedder(config.model)
    cache = sentence_embedder.cache(embedder, context.log.warning)
    table, stats, skipped = semantic_vectors(
        concept_annotations,
        embedder,
        cache,
        config.aggregation,
        ProgressLog(context.log.info, "embedding annotation texts"),
    )
    if skipped:
        context.log.warning(f"{len(skipped)} formulae have no annotation text: {skipped[:10]}")
    table = with_expected_dimension(table, embedder.dimension)
    table = with_model(table, embedder.spec.name, embedder.spec.identity)
    context.log.info(
        f"{stats.embedded:,} texts embedded, {stats.cached:,} from cache, {stats.seconds:.1f} s"
    )
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            **_embedding_metadata(embedder, stats, table),
            "aggregation": config.aggregation,
            "without_texts": len(skipped),
        },
    )


@dg.asset(
    group_name="semantics",
    code_version=EMBEDDING_VERSION,
    automation_condition=AUTOMATION,
    kinds={"pytorch", "parquet"},
    owners=OWNERS,
)
def opt_text_embeddings(
    context: dg.AssetExecutionContext,
    config: EmbeddingConfig,
    sentence_embedder: SentenceEmbedderResource,
    opt_graphs: pa.Table,
):
    """The sentence-transformer vector of each linearised OPT, for the dual-encoder baselines."""
    embedder = sentence_embedder.embedder(config.model)
    cache = sentence_embedder.cache(embedder, context.log.warning)
    table, stats = opt_text_vectors(
        opt_graphs, embedder, cache, ProgressLog(context.log.info, "embedding linearised OPTs")
    )
    table = with_expected_dimension(table, embedder.dimension)
    table = with_model(table, embedder.spec.name, embedder.spec.identity)
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata=_embedding_metadata(embedder, stats, table),
    )


@dg.asset_check(asset=semantic_embeddings, blocking=True)
def semantic_embeddings_valid(semantic_embeddings: pa.Table) -> dg.AssetCheckResult:
    """Finite vectors of the model's width, none all-zero."""
    return check_result(vectors_valid(semantic_embeddings))


@dg.asset_check(asset=opt_text_embeddings, blocking=True)
def opt_text_embeddings_valid(opt_text_embeddings: pa.Table) -> dg.AssetCheckResult:
    """Finite vectors of the model's width, none all-zero."""
    return check_result(vectors_valid(opt_text_embeddings))


semantics_assets = [concept_annotations, semantic_embeddings, opt_text_embeddings]
semantics_checks = [semantic_embeddings_valid, opt_text_embeddings_valid]
