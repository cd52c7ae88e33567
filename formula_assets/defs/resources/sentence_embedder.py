"""How texts are embedded: the model, batch size, device and the embedding cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field

from formula_assets.core import profiles, settings

if TYPE_CHECKING:
    from formula_assets.semantics.cache import EmbeddingCache
    from formula_assets.semantics.models import TextEmbedder


class SentenceEmbedderResource(dg.ConfigurableResource):
    """How texts are embedded: batch size, device, and the cache in the data lake."""

    batch_size: int = Field(default=64, description="Texts per forward pass.")
    device: str | None = Field(
        default=None, description="torch device; default CUDA when present, else CPU."
    )
    cache_path: str | None = Field(
        default=None,
        description="Embedding cache root; default <data lake>/_cache/embeddings. Empty: no cache.",
    )

    def embedder(self, model: str | None) -> TextEmbedder:
        """The model identified by its files' content (a hub model is fetched first)."""
        from formula_assets.semantics.models import TextEmbedder, downloaded, resolve_model

        name, origin = profiles.embedding_model(model)
        spec = downloaded(resolve_model(name, origin), self.device)
        return TextEmbedder(spec, self.device, self.batch_size)

    def cache(self, embedder: TextEmbedder, table: str, warn) -> EmbeddingCache | None:
        """The cache of one table's texts, keyed by the model files' content (tables never
        share vectors; see semantics.cache)."""
        from formula_assets.semantics.cache import EmbeddingCache

        root = settings.embedding_cache_url() if self.cache_path is None else self.cache_path
        return EmbeddingCache(root, embedder.spec.identity, table, warn) if root else None
