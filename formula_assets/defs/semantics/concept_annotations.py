"""`concept_annotations`: each formula's distinct annotation texts (paper §3.2)."""

import dagster as dg
import pyarrow as pa

from formula_assets.core.hashing import table_content_hash
from formula_assets.defs.checks import schema_contract
from formula_assets.defs.metadata import preview
from formula_assets.semantics.annotations import build_annotations


@dg.asset(
    group_name="semantics",
    kinds={"python", "parquet"},
)
def concept_annotations(context: dg.AssetExecutionContext, wikidata_formulae: pa.Table):
    """Each formula's distinct annotation texts: item and concept labels and descriptions."""
    table = build_annotations(wikidata_formulae.to_pylist())
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


concept_annotations_schema = schema_contract([concept_annotations])
