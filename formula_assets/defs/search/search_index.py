"""`search_index`: every formula's vectors in each method's space, per fold, for search."""

import dagster as dg
import pyarrow as pa

from formula_assets.core.arrow import embedding_matrix, recorded_identity, recorded_model
from formula_assets.core.hashing import table_content_hash
from formula_assets.core.protocol import DIRECTIONS
from formula_assets.core.settings import Settings
from formula_assets.defs.checks import check_result, schema_contract
from formula_assets.defs.publication import settle
from formula_assets.evaluation.retrieval import chosen_ensembles
from formula_assets.search.checks import index_complete
from formula_assets.search.index import build_search_index


@dg.asset(
    group_name="search",
    kinds={"python", "parquet"},
)
def search_index(
    context: dg.AssetExecutionContext,
    fold_models: dict,
    semantic_embeddings: pa.Table,
    opt_text_embeddings: pa.Table,
    ensemble_choices: pa.Table,
):
    """The candidates of `formula-assets search`: each formula's vectors per method and fold,
    with the split it was in, so a query only encodes itself and each hit says whether the
    serving models trained on it."""
    models = {(m.fold, m.method): m for m in fold_models.values()}
    table, summary = build_search_index(
        models,
        dict(zip(*embedding_matrix(opt_text_embeddings), strict=True)),
        dict(zip(*embedding_matrix(semantic_embeddings), strict=True)),
        recorded_model(semantic_embeddings),
        recorded_identity(semantic_embeddings),
        chosen_ensembles(ensemble_choices),  # as Table 2 weighed the members
    )
    held_out = {
        f"{method} {direction}": {k: round(v, 3) for k, v in metrics.items()}
        for method, by_direction in summary.held_out.items()
        for direction, metrics in by_direction.items()
    }
    context.log.info(f"indexed {summary.items} formulae × {len(models)} models")
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            "items": summary.items,
            # the running search page (`formula-assets serve`), where the index is used
            "search_page": dg.MetadataValue.url(Settings.from_environment().serve_url),
            "serving_fold": summary.serving_fold,
            "ensemble_weights": dg.MetadataValue.json(
                {str(k): v for k, v in summary.ensemble_weights.items()}
            ),
            "ensemble_hubness_k": dg.MetadataValue.json(
                {str(k): v for k, v in summary.ensemble_hubness_k.items()}
            ),
            "held_out_search": dg.MetadataValue.json(held_out),
            "held_out_recall_at_10": dg.MetadataValue.json(
                {
                    f"{m} {d}": round(summary.held_out[m][d]["recall_at_10"], 3)
                    for m in summary.held_out
                    for d in DIRECTIONS
                }
            ),
        },
    )


@dg.asset_check(asset=search_index, blocking=True)
def search_index_complete(search_index: pa.Table) -> dg.AssetCheckResult:
    """Every fold indexes every method over the same formulae, with finite vectors."""
    return settle(check_result(index_complete(search_index)))


search_index_schema = schema_contract([search_index])
