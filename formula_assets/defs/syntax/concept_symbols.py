"""`concept_symbols`: the symbol Wikidata declares for each concept of a formula, parsed as
the formulae are (`syntax.symbols`)."""

import dagster as dg
import pyarrow as pa

from formula_assets.core.hashing import table_content_hash
from formula_assets.core.settings import Settings
from formula_assets.defs.checks import schema_contract
from formula_assets.defs.metadata import preview
from formula_assets.syntax.concept_symbols import build_concept_symbols
from formula_assets.syntax.opt import parse_options


@dg.asset(
    group_name="syntax",
    kinds={"python", "parquet"},
)
def concept_symbols(context: dg.AssetExecutionContext, wikidata_formulae: pa.Table):
    """Each formula's declared concept symbols (`c` → speed of light in vacuum); a symbol
    that does not parse keeps its row with the reason."""
    pairs = zip(
        wikidata_formulae.column("qid").to_pylist(),
        wikidata_formulae.column("concepts").to_pylist(),
        strict=True,
    )
    table = build_concept_symbols(pairs, parse_options(Settings.from_environment().styled_letters))
    unparsed = table.num_rows - table.column("error").null_count  # null: it parsed
    if unparsed:
        context.log.warning(f"{unparsed} declared symbols did not parse (their rows say why)")
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            "declarations": table.num_rows,
            "formulae": len(set(table.column("qid").to_pylist())),
            "concepts": len(set(table.column("concept").to_pylist())),
            "distinct_symbols": len(
                {s for row in table.column("symbols").to_pylist() for s in row}
            ),
            "unparsed": unparsed,
            "preview": preview(table, ["qid", "label", "symbols"]),
        },
    )


concept_symbols_schema = schema_contract([concept_symbols])
