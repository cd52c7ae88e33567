"""One run of some assets (or one partition) on the shared instance: what the refresh loop,
its worker processes and the other commands share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import dagster as dg

REFRESH_TAG = "formula_assets/refresh"


@cache
def load_definitions() -> dg.Definitions:
    """The code location, loaded once per process."""
    from formula_assets.definitions import defs

    return defs


def materialize(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    keys: Sequence[dg.AssetKey],
    partition: str | None = None,
) -> bool:
    """One in-process run of the given assets (and their checks) on the shared instance."""
    result = dg.materialize(
        [*defs.assets, *defs.asset_checks],
        instance=instance,
        resources=defs.resources,
        selection=dg.AssetSelection.assets(*keys),
        partition_key=partition,
        tags={REFRESH_TAG: "true"},
        raise_on_error=False,
    )
    return result.success


@dataclass(frozen=True)
class Job:
    """One run: some assets computed together, or one partition of one asset."""

    keys: tuple[str, ...]
    partition: str | None = None

    def __str__(self) -> str:
        names = ", ".join(self.keys)
        return f"{names}[{self.partition}]" if self.partition is not None else names
