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


# Small structures for the structural vectors: a/b twice, b/a, x²+1 beside y²+1, √x.
SHAPES = {
    "Q1": "<math><mfrac><mi>a</mi><mi>b</mi></mfrac></math>",
    "Q2": "<math><mfrac><mi>b</mi><mi>a</mi></mfrac></math>",
    "Q3": "<math><mrow><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><mn>1</mn></mrow></math>",
    "Q4": "<math><mrow><msup><mi>y</mi><mn>2</mn></msup><mo>+</mo><mn>1</mn></mrow></math>",
    "Q5": "<math><msqrt><mi>x</mi></msqrt></math>",
    "Q6": "<math><mfrac><mi>a</mi><mi>b</mi></mfrac></math>",
}


def shape_graphs() -> pa.Table:
    from formula_assets.syntax.opt import build_opt_graphs

    return build_opt_graphs(SHAPES.items()).graphs
