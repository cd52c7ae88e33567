"""`correspondence_metrics`: the raw syntax–semantics correspondence, the paper's Table 1 (§4.2)."""

import dagster as dg
import pyarrow as pa
from pydantic import Field

from formula_assets.analysis.checks import every_formula_has_both_vectors, metrics_in_range
from formula_assets.core.arrow import aligned_matrices
from formula_assets.core.hashing import table_content_hash
from formula_assets.defs import metadata
from formula_assets.defs.checks import check_result, schema_contract
from formula_assets.defs.publication import settle
from formula_assets.defs.resources.data_lake import DataLakeResource

DESCRIPTION = (
    "Table 1: how far structural and semantic vectors correspond before any learning. "
    "Not invariant: mean/median/std cosine, recall@k and the permutation test compare two "
    "separately fitted PCA spaces whose axes nothing aligns. Invariant to rotation: RSA, "
    "linear CKA, Procrustes (after the best rotation). In-sample CCA is inflated at this "
    "dimension-to-sample ratio; cca_mean_shuffled and cca_mean_heldout show by how much."
)


class CorrespondenceConfig(dg.Config):
    permutations: int = Field(default=1000, description="Shuffles for the mean-cosine null.")
    rsa_permutations: int = Field(default=199, description="Shuffles for the Mantel RSA test.")
    rsa_max_formulae: int = Field(
        default=3000, description="RSA on a random subset above this size (pairs grow as n²)."
    )
    recall_max_queries: int = Field(
        default=20_000, description="Recall@k on a random sample of queries above this size."
    )
    pca_dimensions: int = Field(default=128, description="PCA width for cosine metrics (≤).")
    cca_components: int = Field(default=50, description="Canonical components (≤).")
    heldout_fraction: float = Field(default=0.2, description="Share held out for CCA.")
    seed: int = Field(default=0, description="Seed of permutations, subsets and splits.")


@dg.asset(
    group_name="analysis",
    description=DESCRIPTION,
    kinds={"scipy", "parquet"},
    # about one sbert_dual_cl fold (10-22 s on the snapshot): in a worker it runs beside the
    # fold models, longest first, not after the short ones (it held up Table 2 by 7 s)
    metadata=metadata.step_cost(1.0),
)
def correspondence_metrics(
    context: dg.AssetExecutionContext,
    config: CorrespondenceConfig,
    data_lake: DataLakeResource,
    structural_embeddings: pa.Table,
    semantic_embeddings: pa.Table,
):
    from formula_assets.analysis import correspondence, figures

    qids, x, y = aligned_matrices(structural_embeddings, semantic_embeddings)
    context.log.info(f"Table 1 over {len(qids):,} formulae with both vectors")
    result = correspondence.correspondence(
        x,
        y,
        correspondence.CorrespondenceSettings(
            pca_dimensions=config.pca_dimensions,
            cca_components=config.cca_components,
            permutations=config.permutations,
            rsa_permutations=config.rsa_permutations,
            rsa_max_formulae=config.rsa_max_formulae,
            recall_max_queries=config.recall_max_queries,
            heldout_fraction=config.heldout_fraction,
            seed=config.seed,
        ),
    )
    table = result.table()
    cca_png = figures.cca_components_figure(
        {
            "in-sample": result.cca_in_sample,
            "shuffled pairs (in-sample)": result.cca_shuffled,
            "held-out 20%": result.cca_heldout,
        }
    )
    cosine_png = figures.cosine_null_figure(result.cosines, result.null_cosines, result.null_means)
    cca_path = data_lake.write_bytes(cca_png, *figures.FIGURE_DIR, figures.CCA_FIGURE)
    cosine_path = data_lake.write_bytes(cosine_png, *figures.FIGURE_DIR, figures.COSINE_FIGURE)
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            "formulae": len(qids),
            "table_1": metadata.table_1(table),
            "cca_per_component": metadata.image(cca_png, "CCA per component"),
            "cosine_vs_null": metadata.image(cosine_png, "cosine vs permutation null"),
            "figure_files": dg.MetadataValue.json([str(cca_path), str(cosine_path)]),
            "permutations": config.permutations,
            "seed": config.seed,
        },
    )


@dg.asset_check(asset=correspondence_metrics, blocking=True)
def correspondence_metrics_in_range(correspondence_metrics: pa.Table) -> dg.AssetCheckResult:
    """Every metric present, finite and in its valid range; R@1 ≤ R@5 ≤ R@10."""
    return settle(check_result(metrics_in_range(correspondence_metrics)))


@dg.asset_check(
    asset=correspondence_metrics,
    additional_ins={
        "opt_graphs": dg.AssetIn("opt_graphs"),
        "structural_embeddings": dg.AssetIn("structural_embeddings"),
        "semantic_embeddings": dg.AssetIn("semantic_embeddings"),
    },
)
def correspondence_inputs_complete(
    correspondence_metrics: pa.Table,
    opt_graphs: pa.Table,
    structural_embeddings: pa.Table,
    semantic_embeddings: pa.Table,
) -> dg.AssetCheckResult:
    """Every parsed formula has a structural and a semantic vector, so Table 1 covers all."""
    return settle(
        check_result(
            every_formula_has_both_vectors(opt_graphs, structural_embeddings, semantic_embeddings)
        )
    )


correspondence_metrics_schema = schema_contract([correspondence_metrics])
