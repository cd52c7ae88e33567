"""Where live formulae come from: the SPARQL endpoint and the dump."""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field

from formula_assets.core.settings import Settings

if TYPE_CHECKING:
    from formula_assets.ingest.sparql import SparqlConfig


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
    accept_partial_dump: bool | None = Field(
        default=None,
        description="Read a truncated dump (with a note) instead of failing; default "
        "FORMULA_ASSETS_ACCEPT_PARTIAL_DUMP, else false.",
    )

    def settings(self) -> Settings:
        """The environment's settings with this resource's fields over them."""
        return Settings.from_environment().with_config(
            source=self.source,
            sparql_endpoint=self.sparql_endpoint,
            user_agent=self.user_agent,
            dump_path=self.dump_path,
            accept_partial_dump=self.accept_partial_dump,
        )

    def sparql_config(self, settings: Settings) -> SparqlConfig:
        from formula_assets.ingest.sparql import SparqlConfig

        return SparqlConfig(
            endpoint=settings.sparql_endpoint,
            user_agent=settings.user_agent,
            timeout_s=self.timeout_s,
            page_size=self.page_size,
            max_retries=self.max_retries,
        )
