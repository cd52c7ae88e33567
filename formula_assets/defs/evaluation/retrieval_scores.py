"""`retrieval_scores`: retrieval on each test fold, the paper's Table 2 (§4.3); with it, from
the same evaluation, `ensemble_choices` (the score ensemble's weights and hubness k per fold)
and `significance_tests` (the paired tests between its methods), which the report reads.

The methods come from the registry (`formula_assets.methods.registry`): evaluation is given
them, it does not know them.
"""

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
from formula_assets.methods import registry

SCORES = "retrieval_scores"
ENSEMBLE_CHOICES = "ensemble_choices"
SIGNIFICANCE = "significance_tests"
DESCRIPTIONS = {
    SCORES: "Cross-modal retrieval per test fold, method and direction: R@1, R@5, R@10 and MRR.",
    ENSEMBLE_CHOICES: "The score ensemble's choice per fold, made on the selection split: each "
    "member's weight and the hubness k.",
    SIGNIFICANCE: "Paired tests between Table 2's methods: Wilcoxon over test queries (with "
    "its Holm-adjusted p) and a t-test over the fold MRRs.",
}


@dg.multi_asset(
    group_name="evaluation",
    can_subset=True,
    outs={
        name: dg.AssetOut(description=description, kinds={"python", "parquet"}, is_required=False)
        for name, description in DESCRIPTIONS.items()
    },
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
    """Every registered method and the score ensemble on each test fold."""
    from formula_assets.evaluation.inputs import evaluation_inputs
    from formula_assets.evaluation.retrieval import ensemble_table, evaluate
    from formula_assets.evaluation.significance import significance, significance_table

    models = {(m.fold, m.method): m for m in fold_models.values()}
    context.log.info(f"scoring {len(models)} trained models on their test folds")
    inputs = evaluation_inputs(
        cv_folds, opt_graphs, concept_annotations, semantic_embeddings, opt_text_embeddings
    )
    lineup = registry.lineup()
    result = evaluate(inputs, models, lineup)
    scores = result.scores
    comparisons = significance(result, lineup)
    weights = {str(k): v for k, v in result.ensemble_weights.items()}
    hubness_k = {str(k): v for k, v in result.ensemble_hubness_k.items()}
    selected = context.op_execution_context.selected_output_names
    if SCORES in selected:
        profiles = sorted({m.description.profile for m in models.values()})
        yield dg.Output(
            scores,
            output_name=SCORES,
            data_version=dg.DataVersion(table_content_hash(scores)),
            metadata={
                "table_2": metadata.table_2(scores),
                "significance": metadata.significance(comparisons),
                "significance_tests": dg.MetadataValue.json([asdict(c) for c in comparisons]),
                "ensemble_weights": dg.MetadataValue.json(weights),
                "ensemble_hubness_k": dg.MetadataValue.json(hubness_k),
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
    if ENSEMBLE_CHOICES in selected:
        yield _table(
            ENSEMBLE_CHOICES,
            ensemble_table(result),
            ensemble_weights=dg.MetadataValue.json(weights),
            ensemble_hubness_k=dg.MetadataValue.json(hubness_k),
        )
    if SIGNIFICANCE in selected:
        yield _table(
            SIGNIFICANCE,
            significance_table(comparisons),
            significance=metadata.significance(comparisons),
        )


def _table(name: str, table: pa.Table, **entries: object) -> dg.Output:
    """One of the step's tables, its data version a hash of its content."""
    return dg.Output(
        table,
        output_name=name,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={"rows": table.num_rows, **entries},
    )


@dg.asset_check(asset=SCORES, blocking=True)
def retrieval_scores_complete(retrieval_scores: pa.Table) -> dg.AssetCheckResult:
    """All 5 folds × every method × both directions are scored, once each."""
    return settle(check_result(scores_complete(retrieval_scores, registry.lineup().names)))


@dg.asset_check(asset=SCORES, blocking=True)
def retrieval_scores_consistent(retrieval_scores: pa.Table) -> dg.AssetCheckResult:
    """R@1 ≤ R@5 ≤ R@10 ≤ 1 and 0 ≤ MRR ≤ 1 in every row."""
    return settle(check_result(scores_consistent(retrieval_scores)))


@dg.asset_check(asset=SCORES)
def retrieval_scores_beat_chance(retrieval_scores: pa.Table) -> dg.AssetCheckResult:
    """Every trained method's R@10 ≥ 3× chance (10 / candidates) in every fold and direction
    (for small pools: at least halfway from chance to 1)."""
    return settle(check_result(scores_beat_chance(retrieval_scores, registry.lineup().judged)))


retrieval_scores_schema = schema_contract([SCORES, ENSEMBLE_CHOICES, SIGNIFICANCE])
