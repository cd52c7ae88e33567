"""What the instance remembers about earlier runs: counts, versions and metadata."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg

from formula_assets.core.hashing import bytes_hash


def latest_materialization(
    instance: dg.DagsterInstance, key: dg.AssetKey | str
) -> dg.AssetMaterialization | None:
    event = instance.get_latest_materialization_event(dg.AssetKey.from_coercible(key))
    return event.asset_materialization if event else None


def metadata_value(
    materialization: dg.AssetMaterialization | None, name: str, default: Any = None
) -> Any:
    if materialization is None or name not in materialization.metadata:
        return default
    return materialization.metadata[name].value


def last_count(instance: dg.DagsterInstance, key: dg.AssetKey, name: str) -> int | None:
    """A count recorded by the last successful materialization or observation of `key`."""
    record = latest_materialization(instance, key)
    if record is None:
        observations = instance.fetch_observations(key, limit=1).records
        record = observations[0].asset_observation if observations else None
    value = metadata_value(record, name)
    return int(value) if isinstance(value, int | float) else None


def _code_and_data(materialization: dg.AssetMaterialization | None) -> tuple[str, str]:
    tags = (materialization.tags if materialization else None) or {}
    return tags.get("dagster/code_version", "—"), tags.get("dagster/data_version", "—")


def versions(instance: dg.DagsterInstance, key: str, partitions: Sequence[str] = ()) -> list[str]:
    """[key, code version, data version] of the input's last materialization. For a partitioned
    input, of every partition's: the code versions that occur and one digest of each partition's
    data version. The last-finished partition alone would make the row depend on the order in
    which runs happened to finish."""
    if not partitions:
        return [key, *_code_and_data(latest_materialization(instance, key))]
    found: dict[str, tuple[str, str]] = {}
    for partition in sorted(partitions):
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey.from_coercible(key), asset_partitions=[partition]
            ),
            limit=1,
        ).records
        found[partition] = _code_and_data(records[0].asset_materialization if records else None)
    code = ", ".join(sorted({c for c, _ in found.values()}))
    data = bytes_hash(*(f"{p}={d}" for p, (_, d) in found.items()))
    return [f"{key} ({len(found)} partitions)", code, data]
