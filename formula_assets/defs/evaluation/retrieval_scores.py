"""`retrieval_scores`: retrieval on each test fold, the paper's Table 2 (§4.3)."""

from dataclasses import asdict

import dagster as dg
import numpy as np
import pyarrow as pa

from formula_assets.core.hashing import table_content_hash
from formula_assets.defs import metadata
from formula_assets.defs.checks import check_result, schema_contract
from formula_assets.defs.publication import settle
from formula_assets.evaluation.checks import (
    scores_beat_chance,
    scores_complete,
    scores_consistent,
)


@dg.asset(
    group_name="evaluation",
    kinds={"python", "parquet"},
)
def retrieval_scores(
    context: dg.AssetExecutionContext,
    fold_models: dict,
    cv_folds: pa.Table,
    opt_graphs: pa.Table,
    concept_annotations: pa.Table,
    semantic_embeddings: pa.Table,
    opt_text_embeddings: pa.Table,
):
    """Cross-modal retrieval per test fold, method and direction: R@1, R@5, R@10 and MRR."""
    from formula_assets.evaluation.inputs import evaluation_inputs
    from formula_assets.evaluation.significance import significance
    from formula_assets.evaluation.table2 import evaluate

    models = {(m.fold, m.method): m for m in fold_models.values()}
    context.log.info(f"scoring {len(models)} trained models on their test folds")
    inputs = evaluation_inputs(
        cv_folds, opt_graphs, concept_annotations, semantic_embeddings, opt_text_embeddings
    )
    result = evaluate(inputs, models)
    scores = result.scores
    comparisons = significance(result)
    profiles = sorted({str(m.config.get("profile")) for m in models.values()})
    return dg.Output(
        scores,
        data_version=dg.DataVersion(table_content_hash(scores)),
        metadata={
            "table_2": metadata.table_2(scores),
            "significance": metadata.significance(comparisons),
            "significance_tests": dg.MetadataValue.json([asdict(c) for c in comparisons]),
            "ensemble_weights": dg.MetadataValue.json(
                {str(k): v for k, v in result.ensemble_weights.items()}
            ),
            "ensemble_hubness_k": dg.MetadataValue.json(
                {str(k): v for k, v in result.ensemble_hubness_k.items()}
            ),
            "recall_by_method": metadata.recall_chart(scores),
            "profiles": ", ".join(profiles),
            "candidates_per_fold": dg.MetadataValue.json(
                dict(
                    zip(
                        map(str, scores["fold"].to_pylist()),
                        scores["candidates"].to_pylist(),
                        strict=True,
                    )
                )
            ),
            "best_mrr": float(np.max(scores["mrr"].to_numpy())) if scores.num_rows else 0.0,
        },
    )


@dg.asset_check(asset=retrieval_scores, blocking=True)
def retrieval_scores_complete(retrieval_scores: pa.Table) -> dg.AssetCheckResult:
    """All 5 folds × every method × both directions are scored, once each."""
    return settle(check_result(scores_complete(retrieval_scores)))


@dg.asset_check(asset=retrieval_scores, blocking=True)
def retrieval_scores_consistent(retrieval_scores: pa.Table) -> dg.AssetCheckResult:
    """R@1 ≤ R@5 ≤ R@10 ≤ 1 and 0 ≤ MRR ≤ 1 in every row."""
    return settle(check_result(scores_consistent(retrieval_scores)))


@dg.asset_check(asset=retrieval_scores)
def retrieval_scores_beat_chance(retrieval_scores: pa.Table) -> dg.AssetCheckResult:
    """Every trained method's R@10 ≥ 3× chance (10 / candidates) in every fold and direction
    (for small pools: at least halfway from chance to 1)."""
    return settle(check_result(scores_beat_chance(retrieval_scores)))


retrieval_scores_schema = schema_contract([retrieval_scores])
