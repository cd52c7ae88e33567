"""What is stale or missing, and why: Dagster's own stale-status resolver, wrapped in one place.

Dagster exposes staleness through its web server; in Python only through a private class
(`CachingStaleStatusResolver`). Keeping every use of it here means one file to adapt when
Dagster changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest


@dataclass(frozen=True)
class Target:
    key: dg.AssetKey
    partition: str | None = None

    def __str__(self) -> str:
        name = self.key.to_user_string()
        return f"{name}[{self.partition}]" if self.partition is not None else name


@dataclass(frozen=True)
class Entry:
    target: Target
    status: str  # MISSING | STALE
    causes: tuple[str, ...]

    def line(self) -> str:
        causes = "; ".join(self.causes)
        return f"{self.target}\t{self.status}" + (f"\t{causes}" if causes else "")


def _cause_text(cause) -> str:
    text = cause.reason
    if cause.dependency is not None:
        dependency = cause.dependency.asset_key.to_user_string()
        if cause.dependency.partition_key:
            dependency += f"[{cause.dependency.partition_key}]"
        text += f" ({dependency})"
    return text


def stale_entries(defs: dg.Definitions, instance: dg.DagsterInstance) -> list[Entry]:
    """Every stale or missing materializable asset (per partition), in topological order."""
    graph = defs.resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    entries: list[Entry] = []
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if not node.is_materializable:
            continue
        partitions: list[str | None] = (
            list(node.partitions_def.get_partition_keys()) if node.partitions_def else [None]
        )
        for partition in partitions:
            status = resolver.get_status(key, partition)
            if status == StaleStatus.FRESH:
                continue
            causes = (
                tuple(_cause_text(c) for c in resolver.get_stale_causes(key, partition))
                if status == StaleStatus.STALE
                else ("never materialized",)
            )
            entries.append(Entry(Target(key, partition), status.value, causes))
    return entries
