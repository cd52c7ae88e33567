"""One entry point over the three sources, chosen by name."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from formula_assets.core.settings import DUMP_PATH_ENV, SOURCES
from formula_assets.ingest.records import FormulaRecord

if TYPE_CHECKING:
    from formula_assets.ingest.sparql_client import SparqlConfig

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
    sparql_config: SparqlConfig | None = None,
    dump_path: str | None = None,
    accept_partial_dump: bool = False,
    log: Log | None = None,
) -> Pull:
    """Formula records from `source` (snapshot | sparql | dump); imports only what it uses."""
    if source == "snapshot":
        from formula_assets.ingest.snapshot import snapshot_records

        return Pull(list(snapshot_records()))
    if source == "sparql":
        from formula_assets.ingest.sparql import sparql_records

        return Pull(sparql_records(required_sparql_config(sparql_config), log=log))
    if source != "dump":
        raise ValueError(f"unknown formula source {source!r}; choose one of {', '.join(SOURCES)}")
    from formula_assets.ingest.dump import scan_dump

    scan = scan_dump(required_dump_path(dump_path), log=log, accept_partial=accept_partial_dump)
    return Pull(scan.records, scan.notes)


def required_sparql_config(config: SparqlConfig | None) -> SparqlConfig:
    """The sparql source's endpoint and User-Agent; the caller resolves them from settings."""
    if config is None:
        raise ValueError("the sparql source needs its endpoint and User-Agent (a SparqlConfig)")
    return config


def required_dump_path(path: str | None) -> str:
    """The dump source's file; without one, an error naming the settings that give it."""
    if not path:
        raise ValueError(
            f"the dump source needs a Wikidata JSON dump: set {DUMP_PATH_ENV} "
            "or the dump_path config to a .json, .json.gz or .json.bz2 file"
        )
    return path


def sample_records(records: Sequence[FormulaRecord], size: int | None) -> list[FormulaRecord]:
    """A stable subset: the `size` items with the smallest hash of their QID.

    The same item stays in the sample when others are added, so samples nest as they grow.
    """
    if size is None or size >= len(records):
        return list(records)

    def rank(record: FormulaRecord) -> bytes:
        return hashlib.blake2b(f"sample:{record.qid}".encode(), digest_size=8).digest()

    return sorted(records, key=rank)[:size]
