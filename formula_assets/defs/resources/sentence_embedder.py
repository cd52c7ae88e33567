"""How texts are embedded: the model, batch size, device and the embedding cache."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field

from formula_assets.core.settings import Settings, embedding_model_origin, frozen_layers_store

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

        settings = Settings.from_environment().with_config(embedding_model=model)
        spec = resolve_model(
            settings.embedding_model, embedding_model_origin(settings), settings.model_dir
        )
        offline = settings.hf_hub_offline
        spec = downloaded(spec, self.device, settings.model_dir, offline)
        return TextEmbedder(spec, self.device, self.batch_size, offline)

    def frozen_layers_store(self) -> Path | None:
        """Where `sbert_finetuned_cl`'s frozen-layer passes are split between the processes
        that need them and kept (`training.shared_chunks`): beside the embedding cache when
        that is on this machine's file system; None (each process its own) otherwise."""
        root = self.cache_path
        if root is None:
            root = Settings.from_environment().embedding_cache
        return frozen_layers_store(root)

    def model_dir(self) -> Path:
        """Where part-packaged models (all-mpnet-base-v2) are unpacked: the `model_dir`
        setting (a fine-tuned encoder's base model may be one)."""
        return Settings.from_environment().model_dir

    def cache(self, embedder: TextEmbedder, table: str, warn) -> EmbeddingCache | None:
        """The cache of one table's texts, keyed by the model files' content (tables never
        share vectors; see semantics.cache)."""
        from formula_assets.semantics.cache import EmbeddingCache

        root = self.cache_path
        if root is None:
            root = Settings.from_environment().embedding_cache
        return EmbeddingCache(root, embedder.cache_identity, table, warn) if root else None
