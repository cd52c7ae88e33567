"""What the instance remembers about earlier runs: counts, versions and metadata."""

from __future__ import annotations

from typing import Any

import dagster as dg


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


def versions(instance: dg.DagsterInstance, key: str) -> list[str]:
    """[key, code version, data version] of the input's last materialization."""
    tags = (latest_materialization(instance, key) or dg.AssetMaterialization(key)).tags or {}
    return [key, tags.get("dagster/code_version", "—"), tags.get("dagster/data_version", "—")]
