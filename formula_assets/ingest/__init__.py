"""Stage `ingest`: Wikidata formula records from the embedded snapshot, live SPARQL or a JSON
entity dump, and the cheap change probe. Every source yields the same `FormulaRecord`s."""
