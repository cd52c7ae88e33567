"""Stage `semantics`: annotation texts, sentence-transformer models, the embedding cache and
the embedding tables."""
