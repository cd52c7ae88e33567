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
from typing import Any

from formula_assets.core import settings
from formula_assets.core.hashing import bytes_hash


@dataclass(frozen=True)
class Fingerprint:
    version: str
    metadata: dict[str, Any]


def fingerprint(
    source: str, sparql_config: object | None = None, dump_path: str | None = None
) -> Fingerprint:
    source = settings.source(source)
    if source == "snapshot":
        from formula_assets.ingest.snapshot import snapshot_path

        digest = bytes_hash(snapshot_path().read_bytes())[:16]
        return Fingerprint(f"snapshot-{digest}", {"source": source, "file_hash": digest})
    if source == "sparql":
        from formula_assets.ingest.sparql import SparqlConfig, sparql_probe

        config = (
            sparql_config if isinstance(sparql_config, SparqlConfig) else SparqlConfig.from_env()
        )
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
    path = settings.dump_path(dump_path)
    stat = os.stat(path)
    return Fingerprint(
        f"dump-{stat.st_size}-{stat.st_mtime_ns}",
        {"source": source, "path": path, "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns},
    )
