"""Group `evaluation`: retrieval on each test fold, the paper's Table 2 (§4.3)."""

import base64

import dagster as dg
import numpy as np
import pyarrow as pa

from formula_assets import bm25, evaluation, figures, retrieval_metrics
from formula_assets.defs.automation import AUTOMATION
from formula_assets.defs.metadata import markdown_table
from formula_assets.defs.outcomes import check_result
from formula_assets.embedding_tables import embedding_matrix
from formula_assets.evaluation import DIRECTIONS, EvaluationInputs, table_2
from formula_assets.hashing import table_content_hash
from formula_assets.quality import scores_beat_chance, scores_complete, scores_consistent
from formula_assets.versioning import code_version

EVALUATION_VERSION = code_version(evaluation, bm25, retrieval_metrics, figures)


def _cell(mean: float, std: float) -> str:
    return f"{mean:.3f} ± {std:.3f}"


TABLE_2_COLUMNS = ["direction", "method", "R@1", "R@5", "R@10", "MRR", "paper R@1/5/10/MRR"]
SIGNIFICANCE_COLUMNS = [
    "method",
    "baseline",
    "direction",
    "Δ mean RR",
    "Wilcoxon p (queries)",
    "paired t p (folds)",
]


def table_2_rows(scores: pa.Table) -> tuple[list[str], list[list[str]]]:
    rows = []
    for row in table_2(scores):
        paper = row["paper"]
        rows.append(
            [
                str(row["direction"]).replace("_", " "),
                str(row["method"]),
                *(_cell(row[f"recall_at_{k}"], row[f"recall_at_{k}_std"]) for k in (1, 5, 10)),
                _cell(row["mrr"], row["mrr_std"]),
                " / ".join(f"{v:.3f}" for v in paper) if paper else "—",
            ]
        )
    return TABLE_2_COLUMNS, rows


def significance_rows(comparisons: list[evaluation.Comparison]) -> list[list[str]]:
    return [
        [
            c.method,
            c.baseline,
            c.direction.replace("_", " "),
            f"{c.mean_rr_difference:+.3f}",
            f"{c.wilcoxon_p:.1e}",
            f"{c.fold_t_p:.1e}",
        ]
        for c in comparisons
    ]


def _markdown(columns: list[str], rows: list[list[str]]) -> str:
    return markdown_table([dict(zip(columns, r, strict=True)) for r in rows], columns)


def evaluation_inputs(
    cv_folds: pa.Table,
    opt_graphs: pa.Table,
    concept_annotations: pa.Table,
    semantic_embeddings: pa.Table,
    opt_text_embeddings: pa.Table,
) -> EvaluationInputs:
    sem_qids, sem = embedding_matrix(semantic_embeddings)
    opt_qids, opt = embedding_matrix(opt_text_embeddings)
    texts = concept_annotations.column("texts").to_pylist()
    return EvaluationInputs(
        folds=dict(zip(cv_folds["qid"].to_pylist(), cv_folds["fold"].to_pylist(), strict=True)),
        opt_text=dict(
            zip(
                opt_graphs["qid"].to_pylist(), opt_graphs["linearised_opt"].to_pylist(), strict=True
            )
        ),
        semantic_text=dict(
            zip(concept_annotations["qid"].to_pylist(), (" ".join(t) for t in texts), strict=True)
        ),
        opt_vectors=dict(zip(opt_qids, opt, strict=True)),
        semantic_vectors=dict(zip(sem_qids, sem, strict=True)),
    )


@dg.asset(
    group_name="evaluation",
    code_version=EVALUATION_VERSION,
    automation_condition=AUTOMATION,
    kinds={"python", "parquet"},
    owners=["team:formula-assets"],
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
    models = {(m.fold, m.method): m for m in fold_models.values()}
    context.log.info(f"scoring {len(models)} trained models on their test folds")
    inputs = evaluation_inputs(
        cv_folds, opt_graphs, concept_annotations, semantic_embeddings, opt_text_embeddings
    )
    result = evaluation.evaluate(inputs, models)
    scores = result.scores
    summary = table_2(scores)
    significance = significance_rows(evaluation.significance(result))
    bars = figures.recall_bars_figure(summary, DIRECTIONS)
    profiles = sorted({str(m.config.get("profile")) for m in models.values()})
    return dg.Output(
        scores,
        data_version=dg.DataVersion(table_content_hash(scores)),
        metadata={
            "table_2": dg.MetadataValue.md(_markdown(*table_2_rows(scores))),
            "significance": dg.MetadataValue.md(_markdown(SIGNIFICANCE_COLUMNS, significance)),
            "significance_rows": dg.MetadataValue.json(significance),
            "ensemble_weights": dg.MetadataValue.json(
                {str(k): v for k, v in result.ensemble_weights.items()}
            ),
            "recall_by_method": dg.MetadataValue.md(
                f"![recall@k per method](data:image/png;base64,{base64.b64encode(bars).decode()})"
            ),
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
    return check_result(scores_complete(retrieval_scores))


@dg.asset_check(asset=retrieval_scores, blocking=True)
def retrieval_scores_consistent(retrieval_scores: pa.Table) -> dg.AssetCheckResult:
    """R@1 ≤ R@5 ≤ R@10 ≤ 1 and 0 ≤ MRR ≤ 1 in every row."""
    return check_result(scores_consistent(retrieval_scores))


@dg.asset_check(asset=retrieval_scores)
def retrieval_scores_beat_chance(retrieval_scores: pa.Table) -> dg.AssetCheckResult:
    """Every trained method's R@10 ≥ 3× chance (10 / candidates) in every fold and direction
    (for small pools: at least halfway from chance to 1)."""
    return check_result(scores_beat_chance(retrieval_scores))
