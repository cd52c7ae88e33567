"""One entry point over the three sources, chosen by name."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from formula_assets.core import settings
from formula_assets.ingest.records import FormulaRecord

Log = Callable[[str], None]


@dataclass(frozen=True)
class Pull:
    """The records of one read, and what it says about the source as a whole (a partial dump,
    skipped lines), which belongs to no single record."""

    records: list[FormulaRecord]
    notes: list[str] = field(default_factory=list)


def load_records(
    source: str,
    *,
    sparql_config: object | None = None,
    dump_path: str | None = None,
    accept_partial_dump: bool | None = None,
    log: Log | None = None,
) -> Pull:
    """Formula records from `source` (snapshot | sparql | dump); imports only what it uses."""
    source = settings.source(source)
    if source == "snapshot":
        from formula_assets.ingest.snapshot import snapshot_records

        return Pull(list(snapshot_records()))
    if source == "sparql":
        from formula_assets.ingest.sparql import SparqlConfig, sparql_records

        config = (
            sparql_config if isinstance(sparql_config, SparqlConfig) else SparqlConfig.from_env()
        )
        return Pull(sparql_records(config, log=log))
    from formula_assets.ingest.dump import scan_dump

    scan = scan_dump(
        settings.dump_path(dump_path),
        log=log,
        accept_partial=settings.accept_partial_dump(accept_partial_dump),
    )
    return Pull(scan.records, scan.notes)


def sample_records(records: Sequence[FormulaRecord], size: int | None) -> list[FormulaRecord]:
    """A stable subset: the `size` items with the smallest hash of their QID.

    The same item stays in the sample when others are added, so samples nest as they grow.
    """
    if size is None or size >= len(records):
        return list(records)

    def rank(record: FormulaRecord) -> bytes:
        return hashlib.blake2b(f"sample:{record.qid}".encode(), digest_size=8).digest()

    return sorted(records, key=rank)[:size]
