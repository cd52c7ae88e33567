"""Wikidata formula sources: the embedded snapshot, live SPARQL, and JSON entity dumps.

Every source yields the same `FormulaRecord`s, so everything downstream is source-agnostic.
"""

from formula_assets.wikidata.records import (
    FORMULA_SCHEMA,
    Concept,
    FormulaRecord,
    qid_from_uri,
    records_to_table,
)

__all__ = ["FORMULA_SCHEMA", "Concept", "FormulaRecord", "qid_from_uri", "records_to_table"]
