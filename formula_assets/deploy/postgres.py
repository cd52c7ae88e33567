"""The event log of a shared deployment on PostgreSQL, its pools' slots claimed atomically.

dagster-postgres claims a concurrency slot in two statements, each committed alone, so two
steps waiting for the same free slot can both take it: eight threads contending for a pool
of one held it up to five at a time, and `formula-assets distributed --training-slots 1`
once trained two models at once. `AtomicSlotClaims` (defs/dagster_internals.py) claims in one
statement. The instance settings (deploy/dagster.yaml) name this class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster_postgres import PostgresEventLogStorage as DagsterPostgresEventLogStorage
from dagster_postgres.utils import get_token_provider_from_config, pg_url_from_config

from formula_assets.defs.dagster_internals import AtomicSlotClaims


class PostgresEventLogStorage(AtomicSlotClaims, DagsterPostgresEventLogStorage):
    @classmethod
    def from_config_value(
        cls, inst_data: Any, config_value: Mapping[str, Any]
    ) -> PostgresEventLogStorage:
        # dagster-postgres builds its own class here; the same arguments build this one
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )
