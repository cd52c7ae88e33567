"""What is stale or missing, and why: Dagster's own stale-status resolver, after observing
the sources as `refresh` does (`cli/observe.py`), so the list is what a refresh would build.

Dagster exposes staleness through its web server; in Python only through a private class,
which `defs.dagster_internals.staleness_reader` wraps (and its test pins).
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from formula_assets.defs.dagster_internals import AssetPartition, staleness_reader


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


def _cause_text(reason: str, dependency: AssetPartition | None) -> str:
    if dependency is None:
        return reason
    key, partition = dependency
    return f"{reason} ({Target(key, partition or None)})"


def stale_entries(defs: dg.Definitions, instance: dg.DagsterInstance) -> list[Entry]:
    """Every stale or missing materializable asset (per partition), in topological order."""
    graph = defs.resolve_asset_graph()
    read = staleness_reader(instance, graph)
    entries: list[Entry] = []
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if not node.is_materializable:
            continue
        partitions: list[str | None] = (
            list(node.partitions_def.get_partition_keys()) if node.partitions_def else [None]
        )
        for partition in partitions:
            staleness = read(key, partition)
            if staleness.status == "FRESH":
                continue
            causes = (
                tuple(_cause_text(*cause) for cause in staleness.causes)
                if staleness.status == "STALE"
                else ("never materialized",)
            )
            entries.append(Entry(Target(key, partition), staleness.status, causes))
    return entries
