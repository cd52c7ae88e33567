"""Group `semantics`: annotation texts and their sentence-transformer vectors."""
