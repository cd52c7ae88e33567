"""Hand-made formulae for the parse tests: one of each outcome (parsed, repaired, hostile,
missing), as a `wikidata_formulae` table."""

import pyarrow as pa

from formula_assets.ingest.records import FormulaRecord, records_to_table

GOOD = "<math><mfrac><mi>a</mi><mi>b</mi></mfrac></math>"
FORMULAE = {
    "Q1": GOOD,
    "Q2": "<math><msup><mi>x</mi><mn>2</mn></msup></math>",
    "Q3": "<!DOCTYPE math [<!ENTITY x SYSTEM 'file:///etc/passwd'>]><math>&x;</math>",
    "Q4": None,
}


def formulae_table(formulae: dict[str, str | None]) -> pa.Table:
    return records_to_table(
        FormulaRecord(qid=q, label=q, description=None, mathml=m) for q, m in formulae.items()
    )
