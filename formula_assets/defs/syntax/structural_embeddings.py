"""`structural_embeddings`: a training-free structural vector per formula."""

from typing import Literal

import dagster as dg
import pyarrow as pa
from pydantic import Field

from formula_assets.core.arrow import embedding_table, with_expected_dimension
from formula_assets.core.hashing import table_content_hash
from formula_assets.defs.checks import vectors_valid_check
from formula_assets.syntax.wl_svd import DEFAULT_DIMENSIONS


class StructuralConfig(dg.Config):
    method: Literal["wl_svd", "random_gine"] = Field(
        default="wl_svd",
        description="wl_svd: Weisfeiler–Lehman subtree features + TF-IDF + TruncatedSVD; "
        "random_gine: the paper's GINE encoder with fixed-seed untrained weights.",
    )
    dimensions: int = Field(default=DEFAULT_DIMENSIONS, description="Vector width.")
    seed: int = Field(default=0, description="Seed of the SVD or of the random GINE weights.")


@dg.asset(
    group_name="syntax",
    kinds={"scikitlearn", "parquet"},
)
def structural_embeddings(
    context: dg.AssetExecutionContext, config: StructuralConfig, opt_graphs: pa.Table
):
    """A training-free structural vector per formula (WL subtree features + SVD by default)."""
    from formula_assets.graphs.training_free import structural_embeddings as embed

    matrix = embed(opt_graphs, config.method, config.dimensions, config.seed)
    table = with_expected_dimension(
        embedding_table(opt_graphs.column("qid").to_pylist(), matrix), config.dimensions
    )
    context.log.info(f"{table.num_rows:,} structural vectors ({config.method})")
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            "method": config.method,
            "dimension": config.dimensions,
            "seed": config.seed,
            "formulae": table.num_rows,
        },
    )


structural_embeddings_valid = vectors_valid_check(structural_embeddings, "configured")
