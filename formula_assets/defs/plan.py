"""What to build now: the one rule of `formula-assets refresh` and of the automation sensor.

An asset (or partition) is built when Dagster's stale status says it is stale or missing and
none of its ancestors is (`buildable`): a step never runs while something above it will still
change, so a change that reaches it by several paths of different lengths builds it once, from
the new data of all of them. `refresh` builds the buildable set round by round until nothing is
stale; the sensor's condition (`defs.automation`) requests it evaluation by evaluation.

Dagster exposes staleness through its web server; in Python only through a private class,
which `defs.dagster_internals.staleness_reader` wraps (and its test pins).
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

from formula_assets.defs.dagster_internals import AssetGraph, AssetPartition, staleness_reader


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
    """Every stale or missing materializable asset of `defs` (per partition)."""
    return stale_in(defs.resolve_asset_graph(), instance)


def stale_in(graph: AssetGraph, instance: dg.DagsterInstance) -> list[Entry]:
    """Every stale or missing materializable asset of `graph` (per partition), in
    topological order."""
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


def buildable(graph: AssetGraph, entries: list[Entry]) -> list[Entry]:
    """The entries none of whose ancestors is itself stale or missing. Not only parents: an
    asset stale for its own code version whose grandparent is being rebuilt would run now and
    again once the rebuild reaches its parent (a parser change ran the annotation audit
    twice)."""
    pending = {e.target.key for e in entries}
    ancestors: dict[dg.AssetKey, set[dg.AssetKey]] = {}

    def above(key: dg.AssetKey) -> set[dg.AssetKey]:
        if key not in ancestors:
            parents = set(graph.get(key).parent_keys)
            ancestors[key] = parents.union(*(above(p) for p in parents))
        return ancestors[key]

    return [e for e in entries if not (above(e.target.key) & pending)]
