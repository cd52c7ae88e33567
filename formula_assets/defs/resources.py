"""External systems as configurable resources."""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field
from upath import UPath

from formula_assets import lake, settings

if TYPE_CHECKING:
    from formula_assets.embedding import TextEmbedder
    from formula_assets.embedding_cache import EmbeddingCache
    from formula_assets.wikidata.sparql import SparqlConfig


class WikidataResource(dg.ConfigurableResource):
    """Where live formulae come from; unset fields fall back to FORMULA_ASSETS_* variables."""

    source: str | None = Field(
        default=None, description="snapshot | sparql | dump; default FORMULA_ASSETS_SOURCE."
    )
    sparql_endpoint: str | None = Field(
        default=None, description="SPARQL endpoint; default FORMULA_ASSETS_SPARQL_ENDPOINT or WDQS."
    )
    user_agent: str | None = Field(
        default=None, description="Descriptive User-Agent with a contact; required by WDQS."
    )
    timeout_s: float = Field(default=60.0, description="Per-request timeout in seconds.")
    page_size: int = Field(default=200, description="Items per detail query.")
    max_retries: int = Field(default=5, description="Retries on 429/5xx/timeouts.")
    dump_path: str | None = Field(
        default=None, description="Wikidata JSON dump; default FORMULA_ASSETS_DUMP_PATH."
    )

    def sparql_config(self) -> SparqlConfig:
        from formula_assets.wikidata.sparql import SparqlConfig

        overrides: dict[str, object] = {
            "timeout_s": self.timeout_s,
            "page_size": self.page_size,
            "max_retries": self.max_retries,
        }
        if self.sparql_endpoint:
            overrides["endpoint"] = self.sparql_endpoint
        if self.user_agent:
            overrides["user_agent"] = self.user_agent
        return SparqlConfig.from_env(**overrides)


class DataLakeResource(dg.ConfigurableResource):
    """Side files of the data lake (figures, caches, models); tables go through the IO manager."""

    base_path: str | None = Field(
        default=None, description="Data lake root; default FORMULA_ASSETS_DATA_LAKE or data_lake/."
    )

    def root(self) -> UPath:
        return UPath(self.base_path or settings.data_lake_url())

    def path(self, *parts: str) -> UPath:
        return self.root().joinpath(*parts)

    def write_bytes(self, data: bytes, *parts: str) -> UPath:
        target = self.path(*parts)
        lake.write_bytes_atomic(data, target)
        return target


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
        from formula_assets.embedding import TextEmbedder, resolve_model

        name, origin = settings.embedding_model(model)
        return TextEmbedder(resolve_model(name, origin), self.device, self.batch_size)

    def cache(self, embedder: TextEmbedder, warn) -> EmbeddingCache | None:
        from formula_assets.embedding_cache import EmbeddingCache

        root = settings.embedding_cache_url() if self.cache_path is None else self.cache_path
        return EmbeddingCache(root, embedder.spec.identity, warn) if root else None
