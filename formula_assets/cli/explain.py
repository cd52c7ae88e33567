"""`formula-assets stale --explain ASSET`: what the asset's code version covers (the modules of
its import closure, the data files shipped beside them, the result-changing settings they
declare) and which of them changed since its last materialization.

The parts are on the asset's definition and recorded on each materialization
(`defs.metadata.COVERS_KEY`), so the two are compared part by part; Dagster itself keeps only
the version's hash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import dagster as dg

from formula_assets.defs.metadata import recorded_covers

CHANGED, ADDED, REMOVED, SAME, UNKNOWN = "changed", "added", "removed", "same", "?"
CODE_VERSION_TAG = "dagster/code_version"


class ExplainError(ValueError):
    pass


@dataclass(frozen=True)
class Part:
    status: str
    label: str  # "<kind> <name>"

    def line(self) -> str:
        kind, _, name = self.label.partition(" ")
        return f"{self.status}\t{kind}\t{name}"


@dataclass(frozen=True)
class Explanation:
    asset: str
    code_version: str | None
    then_version: str | None  # at the last materialization (None: never materialized)
    recorded: bool  # whether that materialization recorded its parts
    parts: list[Part]

    def lines(self) -> list[str]:
        head = f"{self.asset}: code version {self.code_version}"
        if self.then_version is None:
            head += ", never materialized"
        elif not self.recorded:
            head += (
                f"; last materialized with {self.then_version}, which recorded no parts "
                "(materialized before they were recorded): the parts now"
            )
        elif self.then_version == self.code_version:
            head += ", as at its last materialization"
        else:
            changed = sum(p.status != SAME for p in self.parts)
            head += f"; last materialized with {self.then_version}: {changed} part(s) differ"
        return [head, *(p.line() for p in self.parts)]


def compare(now: Mapping[str, str], then: Mapping[str, str] | None) -> list[Part]:
    """Every part now and every part only then, each with what became of it; the parts
    that differ first, then in the version's order."""
    if then is None:
        return [Part(UNKNOWN, label) for label in now]
    parts = [
        Part(SAME if then.get(label) == digest else CHANGED if label in then else ADDED, label)
        for label, digest in now.items()
    ]
    parts += [Part(REMOVED, label) for label in then if label not in now]
    return sorted(parts, key=lambda p: p.status == SAME)


def explain(defs: dg.Definitions, instance: dg.DagsterInstance, asset: str) -> Explanation:
    key = dg.AssetKey.from_user_string(asset)
    graph = defs.resolve_asset_graph()
    if not graph.has(key) or not graph.get(key).is_materializable:
        names = sorted(k.to_user_string() for k in graph.materializable_asset_keys)
        raise ExplainError(f"no materializable asset {asset!r}; choose one of {', '.join(names)}")
    node = graph.get(key)
    now = recorded_covers(node.metadata)
    if now is None:
        raise ExplainError(f"{asset} declares its own code version; it records no parts")
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return Explanation(asset, node.code_version, None, False, compare(now, None))
    materialization = event.asset_materialization
    then = recorded_covers(materialization.metadata)
    then_version = (materialization.tags or {}).get(CODE_VERSION_TAG, "unknown")
    return Explanation(asset, node.code_version, then_version, then is not None, compare(now, then))
