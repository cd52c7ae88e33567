"""A cheap fingerprint of the formula source, so a scheduled probe can tell whether to rebuild.

* snapshot: a hash of the packaged file: constant until the package changes;
* sparql: a digest of every formula item and every concept item it links, each with its
  modification time (`sparql.PROBE_QUERY`): any edit the pull would see changes it (an item's
  label, description, formula, symbols or sitelinks; a concept's label or description), and so
  does an added, removed or relinked item; the number of formula items leads the version;
* dump: the dump file's size and modification time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from formula_assets.core.hashing import bytes_hash
from formula_assets.core.settings import SOURCES
from formula_assets.ingest.sources import required_dump_path, required_sparql_config

if TYPE_CHECKING:
    from formula_assets.ingest.sparql_client import SparqlConfig


@dataclass(frozen=True)
class Fingerprint:
    version: str
    metadata: dict[str, Any]


def fingerprint(
    source: str, sparql_config: SparqlConfig | None = None, dump_path: str | None = None
) -> Fingerprint:
    if source == "snapshot":
        from formula_assets.ingest.snapshot import snapshot_path

        digest = bytes_hash(snapshot_path().read_bytes())[:16]
        return Fingerprint(f"snapshot-{digest}", {"source": source, "file_hash": digest})
    if source == "sparql":
        from formula_assets.ingest.sparql import sparql_probe

        config = required_sparql_config(sparql_config)
        result = sparql_probe(config)
        return Fingerprint(
            f"sparql-{result.items}-{result.digest[:16]}",
            {
                "source": source,
                "endpoint": config.endpoint,
                "items": result.items,
                "concepts": result.concepts,
                "latest_modified": result.latest_modified or "unknown",
                "digest": result.digest,
            },
        )
    if source != "dump":
        raise ValueError(f"unknown formula source {source!r}; choose one of {', '.join(SOURCES)}")
    path = required_dump_path(dump_path)
    stat = os.stat(path)
    return Fingerprint(
        f"dump-{stat.st_size}-{stat.st_mtime_ns}",
        {"source": source, "path": path, "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns},
    )
