"""One run of some assets (or one partition) on the shared instance, and what the refresh
loop, its local worker processes and the distributed runner share."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Protocol

import dagster as dg

from formula_assets.defs.plan import Entry

REFRESH_TAG = "formula_assets/refresh"
JOB_TAG = "formula_assets/refresh_job"

Print = Callable[[str], None]


def say(line: str) -> None:
    """One line of output in one write: a refresh's workers share its stdout, and `print`
    writes the text and the newline apart, so another process's line could come between them
    (`materializing ab` + `materializing c` read as one line)."""
    sys.stdout.flush()  # what this process wrote before stays before
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError):  # a stream without a descriptor (a test's capture)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
        return
    os.write(descriptor, (line + "\n").encode(sys.stdout.encoding or "utf-8", "replace"))


class RefreshError(RuntimeError):
    """The refresh stopped; the message says what failed. The last good data is kept."""


@cache
def load_definitions() -> dg.Definitions:
    """The code location, loaded once per process."""
    from formula_assets.definitions import defs

    return defs


@dataclass(frozen=True)
class Job:
    """One run: some assets computed together, or one partition of one asset."""

    keys: tuple[str, ...]
    partition: str | None = None

    def __str__(self) -> str:
        names = ", ".join(self.keys)
        return f"{names}[{self.partition}]" if self.partition is not None else names

    @property
    def asset_keys(self) -> list[dg.AssetKey]:
        return [dg.AssetKey.from_user_string(k) for k in self.keys]

    def tags(self) -> dict[str, str]:
        return {REFRESH_TAG: "true", JOB_TAG: str(self)}


def materialize(defs: dg.Definitions, instance: dg.DagsterInstance, job: Job) -> bool:
    """One in-process run of the job's assets (and their checks) on the shared instance."""
    result = dg.materialize(
        [*(defs.assets or ()), *(defs.asset_checks or ())],
        instance=instance,
        resources=defs.resources,
        selection=dg.AssetSelection.assets(*job.asset_keys),
        partition_key=job.partition,
        tags=job.tags(),
        raise_on_error=False,
    )
    return result.success


def data_versions(defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, str]:
    """`asset` or `asset[partition]` → the data version of its latest materialization."""
    graph = defs.resolve_asset_graph()
    out: dict[str, str] = {}
    for key in graph.materializable_asset_keys:
        node = graph.get(key)
        partitions = node.partitions_def.get_partition_keys() if node.partitions_def else [None]
        for partition in partitions:
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(
                    asset_key=key, asset_partitions=[partition] if partition else None
                ),
                limit=1,
            ).records
            if records:
                name = key.to_user_string() + (f"[{partition}]" if partition else "")
                tags = records[0].asset_materialization.tags or {}
                out[name] = tags.get("dagster/data_version", "")
    return out


def plan_jobs(defs: dg.Definitions, frontier: Sequence[Entry], together: bool = False) -> list[Job]:
    """The runs of one round. Partitions run one per job. Unpartitioned assets run one job per
    step (the assets of a multi-asset together), or all in one job when `together` (an
    executor that spreads one run's steps over workers)."""
    graph = defs.resolve_asset_graph()
    jobs: list[Job] = []
    units: dict[int, set[dg.AssetKey]] = {}
    for entry in frontier:
        key = entry.target.key
        if entry.target.partition is not None:
            jobs.append(Job((key.to_user_string(),), entry.target.partition))
            continue
        node = graph.get(key)
        unit = 0 if together else id(node.assets_def)
        units.setdefault(unit, set()).update({key, *node.execution_set_asset_keys})
    jobs += [Job(tuple(sorted(k.to_user_string() for k in unit))) for unit in units.values()]
    return jobs


class Runner(Protocol):
    """Runs the jobs of one refresh round: locally (processes) or on a distributed engine."""

    def plan(self, defs: dg.Definitions, frontier: Sequence[Entry]) -> list[Job]: ...

    def expect(self, defs: dg.Definitions, entries: Sequence[Entry]) -> None:
        """Told everything stale or missing before each round: a runner may get ready for
        the heavy steps ahead while the light ones above them run."""
        ...

    def run(
        self, defs: dg.Definitions, instance: dg.DagsterInstance, jobs: list[Job], echo: Print
    ) -> list[Job]:
        """Run every job; return the ones whose run failed (raise RefreshError when the
        runner itself broke)."""
        ...
