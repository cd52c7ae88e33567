"""Group `ingest`: the Wikidata change probe and the formula items."""
