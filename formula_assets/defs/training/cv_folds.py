"""`cv_folds`: fold 1–5 per formula, the paper's published split where known."""

import dagster as dg
import pyarrow as pa

from formula_assets.core.hashing import table_content_hash
from formula_assets.core.protocol import FOLDS
from formula_assets.defs.checks import check_result, schema_contract
from formula_assets.defs.publication import settle
from formula_assets.training.checks import folds_valid
from formula_assets.training.folds import assign_folds


@dg.asset(
    group_name="training",
    kinds={"python", "parquet"},
)
def cv_folds(wikidata_formulae: pa.Table):
    """Fold 1–5 per formula: the paper's published fold where known, else a hash of the QID."""
    table = assign_folds(
        zip(
            wikidata_formulae.column("qid").to_pylist(),
            wikidata_formulae.column("paper_fold").to_pylist(),
            strict=True,
        )
    )
    sizes = dict.fromkeys(FOLDS, 0)
    for f in table.column("fold").to_pylist():
        sizes[f] += 1
    sources = table.column("fold_source").to_pylist()
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            "formulae": table.num_rows,
            "fold_sizes": dg.MetadataValue.json({str(k): v for k, v in sizes.items()}),
            "from_paper": sources.count("paper"),
            "from_hash": sources.count("hash"),
        },
    )


@dg.asset_check(asset=cv_folds, blocking=True, additional_ins={"wikidata_formulae": dg.AssetIn()})
def cv_folds_cover_every_formula(
    cv_folds: pa.Table, wikidata_formulae: pa.Table
) -> dg.AssetCheckResult:
    """Each formula in exactly one fold of 1–5, no fold empty."""
    return settle(check_result(folds_valid(cv_folds, wikidata_formulae)))


cv_folds_schema = schema_contract([cv_folds])
