"""Group `audit`: the annotation audit, the editors' queue of Wikidata annotations to check."""
