"""One entry point over the three sources, chosen by name."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from formula_assets.core import settings
from formula_assets.ingest.records import FormulaRecord

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
        from formula_assets.ingest.snapshot import snapshot_records

        return list(snapshot_records())
    if source == "sparql":
        from formula_assets.ingest.sparql import SparqlConfig, sparql_records

        config = (
            sparql_config if isinstance(sparql_config, SparqlConfig) else SparqlConfig.from_env()
        )
        return sparql_records(config, log=log)
    from formula_assets.ingest.dump import dump_records

    return dump_records(settings.dump_path(dump_path), log=log)


def sample_records(records: Sequence[FormulaRecord], size: int | None) -> list[FormulaRecord]:
    """A stable subset: the `size` items with the smallest hash of their QID.

    The same item stays in the sample when others are added, so samples nest as they grow.
    """
    if size is None or size >= len(records):
        return list(records)

    def rank(record: FormulaRecord) -> bytes:
        return hashlib.blake2b(f"sample:{record.qid}".encode(), digest_size=8).digest()

    return sorted(records, key=rank)[:size]
