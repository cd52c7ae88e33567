"""What other entry points are building right now on the shared instance.

The automation sensor, the UI, `dg launch` and a second refresh all record their runs in the
one instance, so a refresh can see a step that is already being built and wait for it
instead of building it a second time beside it (two runs training the same fold model side by
side). A run announces every asset (partition) it will build with a planned-materialization
event when it is created, queued or not; an asset backfill holds the targets it has not
launched yet. Queued runs and backfills move only while a Dagster daemon runs: without one
they are not waited for. Nor is a run still marked started whose process is gone (killed with
its `dg dev` or refresh): with the instance in SQLite, every run's process is on this machine.
What Dagster offers here only through private modules comes from `defs.dagster_internals`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import dagster as dg

from formula_assets.cli.runs import REFRESH_TAG, Job
from formula_assets.core.lake import pid_alive
from formula_assets.defs import dagster_internals as internals
from formula_assets.defs.plan import Target

RUNNING = {
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
}
WAITING = {dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED}
# A daemon writes a heartbeat every 30 s; one older than this is taken as gone.
DAEMON_HEARTBEAT_S = 120.0
# A run created in-process (`dg launch`, a refresh) is NOT_STARTED for a moment only.
NOT_STARTED_GRACE_S = 60.0
_PLANNED = dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED
_MATERIALIZED = dg.DagsterEventType.ASSET_MATERIALIZATION


@dataclass(frozen=True)
class Builder:
    """A run or an asset backfill that is building (or will build) a target."""

    kind: str  # run | backfill
    id: str
    origin: str
    state: str

    def __str__(self) -> str:
        return f"{self.kind} {self.id} ({self.origin}, {self.state})"


def origin(tags: Mapping[str, str]) -> str:
    """Which entry point started a run or backfill, from Dagster's tags."""
    if tags.get(REFRESH_TAG):
        return "another formula-assets refresh"
    if tags.get(internals.SENSOR_TAG):
        return f"sensor {tags[internals.SENSOR_TAG]}"
    if tags.get(internals.AUTOMATION_TAG):
        return "the automation sensor"
    if tags.get(internals.SCHEDULE_TAG):
        return f"schedule {tags[internals.SCHEDULE_TAG]}"
    if tags.get(internals.BACKFILL_TAG):
        return f"backfill {tags[internals.BACKFILL_TAG]}"
    return "the UI or a dg/dagster command"


def job_targets(job: Job) -> list[Target]:
    return [Target(key, job.partition) for key in job.asset_keys]


def daemon_alive(instance: dg.DagsterInstance, now: float) -> bool:
    """Whether a Dagster daemon (which starts queued runs and backfills) is running."""
    beats = instance.get_daemon_heartbeats().values()
    return any(now - beat.timestamp < DAEMON_HEARTBEAT_S for beat in beats)


def run_process_gone(instance: dg.DagsterInstance, run_id: str) -> bool:
    """A started run whose process (the one that began it) no longer exists on this machine."""
    if not internals.runs_on_this_machine(instance):
        return False  # runs may be on other machines
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.RUN_START, limit=1
    ).records
    event = records[0].event_log_entry.dagster_event if records else None
    return event is not None and event.pid is not None and not pid_alive(event.pid)


def _moving(instance: dg.DagsterInstance, record, now: float, daemon: bool) -> bool:
    """A run that is running, or will be started by someone."""
    status = record.dagster_run.status
    if status == dg.DagsterRunStatus.STARTED:
        return not run_process_gone(instance, record.dagster_run.run_id)
    if status in RUNNING:
        return True
    if status == dg.DagsterRunStatus.NOT_STARTED and now - record.create_timestamp.timestamp() < (
        NOT_STARTED_GRACE_S
    ):
        return True
    return status in WAITING and daemon


def _unbuilt_targets(instance: dg.DagsterInstance, run_id: str) -> set[Target]:
    """What a run planned to build and has not built yet."""
    planned: set[Target] = set()
    built: set[Target] = set()
    records = instance.get_records_for_run(run_id, of_type={_PLANNED, _MATERIALIZED}).records
    for record in records:
        event = record.event_log_entry.dagster_event
        if event is None or event.asset_key is None:
            continue
        if event.event_type == _MATERIALIZED:
            built.add(Target(event.asset_key, event.partition))
            continue
        partitions = internals.planned_partitions(event)
        planned |= {Target(event.asset_key, partition) for partition in partitions}
    return planned - built


def building_elsewhere(
    defs: dg.Definitions, instance: dg.DagsterInstance, targets: Iterable[Target]
) -> dict[Target, Builder]:
    """The targets some run or asset backfill is building now, each with that builder."""
    wanted = set(targets)
    now = time.time()
    daemon = daemon_alive(instance, now)
    found: dict[Target, Builder] = {}
    unfinished = instance.get_run_records(
        filters=dg.RunsFilter(statuses=[*RUNNING, *WAITING]), ascending=True
    )
    for record in unfinished:
        if not _moving(instance, record, now, daemon):
            continue
        run = record.dagster_run
        builder = Builder("run", run.run_id, origin(run.tags), run.status.value.lower())
        for target in _unbuilt_targets(instance, run.run_id) & wanted:
            found.setdefault(target, builder)
    left = wanted - set(found)
    if not left or not daemon:
        return found
    graph = defs.resolve_asset_graph()
    for backfill in internals.requested_asset_backfills(instance, graph):
        builder = Builder("backfill", backfill.id, origin(backfill.tags), "requested")
        for target in left:
            if (target.key, target.partition) in backfill.pending:
                found.setdefault(target, builder)
    return found
