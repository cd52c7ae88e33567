"""Every use of Dagster's internals, in one place: what the project needs that Dagster offers
only through private modules (`dagster._…`) or undocumented structure.

Each function states the behaviour relied on, and `formula_assets_tests/defs/
test_dagster_internals.py` pins it with a test of the same name, so a Dagster upgrade that
changes one fails there, by name, before anything built on it misbehaves. No other module of
the package imports `dagster._…` (a test checks it). Dagster 1.13.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.errors import DagsterDefinitionChangedDeserializationError
from dagster._core.execution.context.output import RUN_ID_PLACEHOLDER
from dagster._core.loader import LoadingContextForTest
from dagster._core.storage.tags import (
    AUTOMATION_CONDITION_TAG,
    BACKFILL_ID_TAG,
    SCHEDULE_NAME_TAG,
    SENSOR_NAME_TAG,
)
from dagster._core.storage.upath_io_manager import escape_dotdot_segments
from dagster._utils.concurrency import ConcurrencySlotStatus

# Run storage, backfills and reconstruction pull in SQLAlchemy and the remote representation
# (half a second): imported where used, not when the definitions load.
if TYPE_CHECKING:
    from dagster._core.definitions.reconstruct import ReconstructableJob

# The tags Dagster puts on the runs it launches: which entry point started a run.
SENSOR_TAG = SENSOR_NAME_TAG
AUTOMATION_TAG = AUTOMATION_CONDITION_TAG
SCHEDULE_TAG = SCHEDULE_NAME_TAG
BACKFILL_TAG = BACKFILL_ID_TAG

AssetPartition = tuple[dg.AssetKey, str | None]
# The asset graph of a Definitions (`resolve_asset_graph`) or of an automation evaluation
# (`AutomationContext.asset_graph`): Dagster's public API names no type for it.
AssetGraph = BaseAssetGraph


# ---------------------------------------------------------------- definitions


def defining_module(assets_def: dg.AssetsDefinition) -> str:
    """The module whose function computes the asset(s): where `@asset` / `@multi_asset` was
    applied (the op's decorated function)."""
    return assets_def.op.compute_fn.decorated_fn.__module__  # type: ignore[union-attr]


def map_asset_specs(
    defs: dg.Definitions, func: Callable[[dg.AssetSpec], dg.AssetSpec]
) -> dg.Definitions:
    """`defs` with `func` applied to the spec of every asset definition, everything else as it
    was. `Definitions.map_asset_specs` refuses the `SourceAsset`s that
    `observable_source_asset` makes; this is the variant Dagster's own component
    post-processing uses, which passes them through untouched."""
    return defs.permissive_map_resolved_asset_specs(func=func, selection=None)


def location_asset_job(module: str, attribute: str, working_directory: str) -> ReconstructableJob:
    """The implicit asset job (every asset) of the code location `module:attribute`, as a job
    that other processes rebuild from its module: what `dg.execute_job` runs with an executor
    that sends steps elsewhere (Celery). `dg.reconstructable` cannot wrap it: a repository of
    that one job refuses its reserved name."""
    from dagster._core.definitions.reconstruct import ReconstructableRepository

    repository = ReconstructableRepository.for_module(
        module, attribute, working_directory=working_directory
    )
    job = repository.get_definition().get_implicit_global_asset_job_def()
    return repository.get_reconstructable_job(job.name)


# ---------------------------------------------------------------- staleness


@dataclass(frozen=True)
class Staleness:
    """An asset (partition)'s status as the UI shows it: FRESH, STALE or MISSING, and for a
    stale one the causes, each a reason and the dependency it is about (if any)."""

    status: str
    causes: tuple[tuple[str, AssetPartition | None], ...] = ()


def staleness_reader(
    instance: dg.DagsterInstance, graph: object
) -> Callable[[dg.AssetKey, str | None], Staleness]:
    """Dagster's own stale-status resolver (what the web server's `staleStatus` reads), for
    one consistent look at the instance. Dagster has no public Python API for it; the test
    loading context is the one that needs no web server."""
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))  # type: ignore[arg-type]

    def read(key: dg.AssetKey, partition: str | None = None) -> Staleness:
        status = resolver.get_status(key, partition)
        if status != StaleStatus.STALE:
            return Staleness(status.value)
        causes = tuple(
            (
                cause.reason,
                (cause.dependency.asset_key, cause.dependency.partition_key)
                if cause.dependency is not None
                else None,
            )
            for cause in resolver.get_stale_causes(key, partition)
        )
        return Staleness(status.value, causes)

    return read


def evaluation_instance(context: dg.AutomationContext) -> dg.DagsterInstance:
    """The instance an automation condition is evaluated against: a condition written in
    Python (`defs.automation`) reads the stale status there, which the context offers only
    through its asset graph view."""
    return context.asset_graph_view.instance


# ---------------------------------------------------------------- runs and backfills


def planned_partitions(event: dg.DagsterEvent) -> list[str | None]:
    """The partitions an asset-materialization-planned event announces: one run may plan a
    range of them (a backfill run) as a partitions subset rather than one partition."""
    subset = event.event_specific_data.partitions_subset  # type: ignore[union-attr]
    return list(subset.get_partition_keys()) if subset is not None else [event.partition]


def runs_on_this_machine(instance: dg.DagsterInstance) -> bool:
    """Whether every run of the instance runs on this machine: so with run storage in SQLite,
    which other machines cannot share."""
    from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage

    return isinstance(instance.run_storage, SqliteRunStorage)


@dataclass(frozen=True)
class PendingBackfill:
    """A requested asset backfill and the asset partitions it has not built (or failed) yet."""

    id: str
    tags: dict[str, str]
    pending: frozenset[AssetPartition]


def requested_asset_backfills(
    instance: dg.DagsterInstance, graph: object
) -> Iterator[PendingBackfill]:
    """Asset backfills still in the REQUESTED state (the daemon launches their runs), with what
    each has left. A backfill made for other definitions is skipped: its runs, if any, are
    runs like the others."""
    from dagster._core.execution.backfill import BulkActionsFilter, BulkActionStatus

    backfills = instance.get_backfills(
        filters=BulkActionsFilter(statuses=[BulkActionStatus.REQUESTED])
    )
    for backfill in backfills:
        if not backfill.is_asset_backfill:
            continue
        try:
            data = backfill.get_asset_backfill_data(graph)  # type: ignore[arg-type]
        except DagsterDefinitionChangedDeserializationError:
            continue
        left = data.get_targeted_partitions_without_materialization_status()
        pending = frozenset(
            (target.asset_key, target.partition_key) for target in left.iterate_asset_partitions()
        )
        yield PendingBackfill(backfill.backfill_id, dict(backfill.tags), pending)


# ---------------------------------------------------------------- inside a step


def in_run(context: dg.InputContext | dg.OutputContext) -> bool:
    """Whether an IO manager is called by a step of a run (not directly, as in a unit test or
    `Definitions.load_asset_value`)."""
    try:
        context.step_context  # noqa: B018
    except dg.DagsterInvariantViolationError:
        return False
    return True


def step_instance(context: dg.InputContext | dg.OutputContext) -> dg.DagsterInstance:
    """The instance of the run the IO manager works for (call only `in_run`)."""
    return context.step_context.instance


def upstream_run_id(context: dg.InputContext) -> str | None:
    """The run whose step produced this input, when it came from a step of this run (or of the
    run a re-execution started from); None when the input is read from storage, as a step run
    without its parent reads it: Dagster then builds a stand-in upstream context whose run
    id is a placeholder."""
    upstream = context.upstream_output
    if upstream is None:
        return None
    try:
        run_id = upstream.run_id
    except dg.DagsterInvariantViolationError:
        return None
    return None if run_id == RUN_ID_PLACEHOLDER else run_id


def blocking_checks_in_run(
    context: dg.OutputContext, own: frozenset[dg.AssetCheckKey] = frozenset()
) -> list[dg.AssetCheckKey]:
    """The blocking checks that judge this output in its run: those of its asset the run
    executes (a re-execution may run only some steps; a step process of the multiprocess
    executor sees a plan of its own step alone, so the run's step keys decide), and the
    checks the writing step evaluates itself (`own`: in-step checks judge every table the
    step writes)."""
    step = context.step_context
    layer = step.job_def.asset_layer
    graph = layer.asset_graph  # the run's selection: checks left out of it are not here
    to_run = step.dagster_run.step_keys_to_execute
    found = []
    for key in graph.asset_check_keys:
        if not graph.get_check_spec(key).blocking:
            continue
        if key in own or (
            key.asset_key == context.asset_key
            and (to_run is None or str(layer.get_op_output_handle(key).node_handle) in to_run)
        ):
            found.append(key)
    return found


# ---------------------------------------------------------------- storage


def escape_partition(partition: str) -> str:
    """A partition key as a path below the asset's folder: `..` segments escaped so a key
    cannot climb out of it (Dagster's own escaping for hierarchical file systems)."""
    return escape_dotdot_segments(partition)


class AtomicSlotClaims:
    """Mixed in before an SQL event log storage: a step takes a pool's free slot in one
    statement, so two steps never hold the same slot.

    Relied on: `claim_concurrency_slot` takes the slot of a step it has assigned through
    `_claim_concurrency_slot(concurrency_key, run_id, step_key)`, and each slot is a row of
    `ConcurrencySlotsTable` whose `step_key` is NULL while it is free. dagster-postgres runs
    every statement of `index_connection` in its own transaction, so Dagster's own claim, a
    `SELECT … FOR UPDATE` and then an `UPDATE`, lets go of the row between the two: steps
    waiting for a pool of one took its slot together (deploy/postgres.py)."""

    if TYPE_CHECKING:

        def index_connection(self) -> AbstractContextManager[Any]: ...

    def _claim_concurrency_slot(
        self, concurrency_key: str, run_id: str, step_key: str
    ) -> ConcurrencySlotStatus:
        import sqlalchemy as sa
        from dagster._core.storage.event_log.schema import ConcurrencySlotsTable as slots

        free = (
            sa.select(slots.c.id)
            .where(
                slots.c.concurrency_key == concurrency_key,
                slots.c.step_key.is_(None),
                slots.c.deleted == sa.false(),
            )
            .limit(1)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        # one statement: the row it finds stays locked until it is taken, and a concurrent
        # claim skips it (or, once it is taken, finds it no longer free)
        claim = slots.update().where(slots.c.id == free).values(run_id=run_id, step_key=step_key)
        with self.index_connection() as conn:
            claimed = conn.execute(claim).rowcount
        return ConcurrencySlotStatus.CLAIMED if claimed else ConcurrencySlotStatus.BLOCKED
