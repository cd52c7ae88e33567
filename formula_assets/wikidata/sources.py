"""One entry point over the three sources, chosen by name."""

from __future__ import annotations

from collections.abc import Callable

from formula_assets import settings
from formula_assets.wikidata.records import FormulaRecord

Log = Callable[[str], None]


def load_records(
    source: str,
    *,
    sparql_config: object | None = None,
    dump_path: str | None = None,
    log: Log | None = None,
) -> list[FormulaRecord]:
    """Formula records from `source` (snapshot | sparql | dump); imports only what it uses."""
    source = settings.source(source)
    if source == "snapshot":
        from formula_assets.wikidata.snapshot import snapshot_records

        return list(snapshot_records())
    if source == "sparql":
        from formula_assets.wikidata.sparql import SparqlConfig, sparql_records

        config = (
            sparql_config if isinstance(sparql_config, SparqlConfig) else SparqlConfig.from_env()
        )
        return sparql_records(config, log=log)
    from formula_assets.wikidata.dump import dump_records

    return dump_records(settings.dump_path(dump_path), log=log)
