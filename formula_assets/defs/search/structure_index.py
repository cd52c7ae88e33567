"""`structure_index`: every formula's canonical keys, for the structure channel of search
(`search.structure`), with each item's annotations by identifier (the symbol explanation)."""

import dagster as dg
import pyarrow as pa

from formula_assets.core.hashing import table_content_hash
from formula_assets.core.settings import Settings
from formula_assets.defs.checks import schema_contract
from formula_assets.defs.metadata import preview
from formula_assets.search.structure import StructureIndex, structure_table, variant_quality
from formula_assets.syntax.opt import parse_options


@dg.asset(group_name="search", kinds={"python", "parquet"})
def structure_index(
    context: dg.AssetExecutionContext, opt_graphs: pa.Table, wikidata_formulae: pa.Table
):
    """Each formula's pattern (up to renaming, operand order and sides), the patterns of its
    links and parts, its near-match features, and its annotations by identifier. The metadata
    measures the index on variants of every item's own formula."""
    options = parse_options(Settings.from_environment().styled_letters)
    table = structure_table(opt_graphs, wikidata_formulae, options)
    quality = variant_quality(StructureIndex(table), wikidata_formulae, options)
    distinct = len(set(table.column("pattern").to_pylist()))
    context.log.info(f"{table.num_rows} formulae, {distinct} distinct patterns")
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            "formulae": table.num_rows,
            "distinct_patterns": distinct,
            "variant_success_at_1": dg.MetadataValue.json(
                {kind: figures["strict_success_at_1"] for kind, figures in quality.items()}
            ),
            "variant_success_at_1_same_formula": dg.MetadataValue.json(
                {kind: figures["same_formula_success_at_1"] for kind, figures in quality.items()}
            ),
            "variant_quality": dg.MetadataValue.json(quality),
            "preview": preview(table, ["qid", "size", "identifiers"]),
        },
    )


structure_index_schema = schema_contract([structure_index])
