"""When a table becomes what readers see: the Dagster side of `core.staging`.

A table is gated by the blocking checks of its asset that run later in the same run, and by
the blocking checks its own step evaluates (in-step checks judge every table the step
writes: `opt_graphs` and `rejected_formulae` are published together or not at all). The IO
manager stages a gated table and holds it for the step; a step that loads a staged version
holds it too. `record` (called by `defs.checks.check_result`) marks a settled check on the
versions its step holds, and the check that completes the set publishes. Dagster lets
downstream steps run after a failed check of WARN severity, so such a failure settles it too.

Dagster takes an asset's latest materialization (its data, code and input versions) as what
the asset is, and a child records it as what it read. When a check leaves an older table
published (it failed), or publishes one another run materialized (run on its own), that is
not the one the published table came from, so `record_published` records that
materialization again after the step (see there).

Outside every code version, like `defs.checks`: it decides when data is shown, never what
it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import dagster as dg
import pyarrow as pa
from upath import UPath

from formula_assets.core import staging
from formula_assets.defs import dagster_internals as internals

# Tags of a materialization recorded again: the run that made the published table, and the
# run whose version a check rejected (what a check run on its own then judges).
PUBLISHED_RUN_TAG = "formula_assets/published_run"
REJECTED_RUN_TAG = "formula_assets/rejected_run"


@dataclass(frozen=True)
class _Held:
    """A staged version, and the asset (partition) it is a materialization of."""

    version: staging.StagedVersion
    asset_key: dg.AssetKey
    partition: str | None


# (run id, step key) → the staged versions that step wrote or read, by staged path.
_HELD: dict[tuple[str, str], dict[str, _Held]] = {}
# run id → the versions a check of that run (in this process) rejected or published.
_SETTLED: dict[str, dict[str, _Held]] = {}


def check_id(key: dg.AssetCheckKey) -> str:
    """`asset:check`: check names are unique per asset only."""
    return key.to_user_string()


def gating_checks(context: dg.OutputContext) -> list[str]:
    """The blocking checks that must pass before this output is published: empty when the
    run evaluates none (the table is then published at once)."""
    if not internals.in_run(context) or not context.has_asset_key:
        return []  # an IO manager called outside a run
    current = _current_context()
    own = frozenset(current.selected_asset_check_keys) if current else frozenset()
    return sorted(check_id(key) for key in internals.blocking_checks_in_run(context, own))


def stamp(context: dg.OutputContext, table: pa.Table) -> pa.Table:
    """The table marked with the run that writes it (`staging.stamped`), when in a run."""
    try:
        return staging.stamped(table, context.run_id)
    except dg.DagsterInvariantViolationError:
        return table


def unpublished(context: dg.InputContext, root: UPath, path: UPath) -> FileNotFoundError:
    """The error for an input that has no published table: say whether versions of it wait
    on their checks (a first build whose blocking check failed)."""
    runs = staging.staged_runs(root, path)
    if not runs:
        return FileNotFoundError(f"{path} does not exist")
    name = context.asset_key.to_user_string() if context.has_asset_key else str(path)
    return FileNotFoundError(
        f"{name} has no published version: the version of run {', '.join(runs)} has not "
        f"passed its blocking checks (it waits in {staging.staged_folder(root, path)}); "
        f"materialize {name} again, or run its failed check on its own once it should pass"
    )


def hold(context: dg.InputContext | dg.OutputContext, version: staging.StagedVersion) -> None:
    """Remember a staged version for the step, so its checks can settle it."""
    step = context.step_context
    keys = context.asset_partition_keys if context.has_asset_partitions else []
    held = _Held(version, context.asset_key, keys[0] if len(keys) == 1 else None)
    _HELD.setdefault((step.run_id, step.step.key), {})[str(version.table)] = held


def release(context: dg.InputContext, version: staging.StagedVersion) -> None:
    """Forget a version that is no longer staged (published, or swept meanwhile)."""
    step = context.step_context
    _HELD.get((step.run_id, step.step.key), {}).pop(str(version.table), None)


def source_run(context: dg.InputContext) -> str | None:
    """The run whose staged version this input should read, if any.

    Within a run (or a re-execution) it is the run that produced the upstream output. A check
    run on its own judges the asset's latest materialization (or the rejected one that it
    records the published version after), so it reads that run's version while it is still
    staged (and publishes it if the check now passes). Any other step that loads from another
    run reads the published table."""
    if not internals.in_run(context):
        return None
    upstream = internals.upstream_run_id(context)
    if upstream is not None:
        return upstream
    current = _current_context()
    if not isinstance(current, dg.AssetCheckExecutionContext):
        return None
    if context.asset_key not in {key.asset_key for key in current.selected_asset_check_keys}:
        return None
    partitions = context.asset_partition_keys if context.has_asset_partitions else [None]
    if len(partitions) != 1:
        return None
    instance = internals.step_instance(context)
    latest = next(_materializations(instance, context.asset_key, partitions[0]), None)
    if latest is None:
        return None
    return (latest.asset_materialization.tags or {}).get(REJECTED_RUN_TAG) or _made_by(latest)


def sweep(context: dg.OutputContext, root: UPath, path: UPath) -> None:
    """Before `path` is written: remove its staged versions left by finished runs. A run the
    instance does not know may belong to another instance sharing the data lake, so its
    versions are left alone."""
    if not internals.in_run(context):
        return
    instance = internals.step_instance(context)

    def finished(run_id: str) -> bool:
        run = instance.get_run_by_id(run_id)
        return run is not None and run.is_finished

    staging.sweep(root, path, context.run_id, finished)


def record(result: dg.AssetCheckResult) -> None:
    """Settle the check of `result` on the staged versions its step holds; publish each
    version whose gating checks have now all settled."""
    context = _current_context()
    if context is None:  # a check function called directly, outside a run
        return
    op = context.op_execution_context
    key = _check_key(result, op.selected_asset_check_keys)
    versions = _HELD.get((op.run_id, op.get_step_execution_context().step.key), {})
    if key is None or not versions:
        return
    name = check_id(key)
    settled = result.passed or result.severity == dg.AssetCheckSeverity.WARN
    for staged, held in list(versions.items()):
        version = held.version
        if settled and staging.record_pass(version, name):
            op.log.info(f"{name} passed: published {version.published}")
            versions.pop(staged, None)
        elif not settled and name in (staging.required_checks(version) or []):
            op.log.warning(
                f"{name} failed: {version.published} keeps its last published version; "
                f"the rejected one stays at {version.table}"
            )
        else:
            continue
        _SETTLED.setdefault(op.run_id, {})[staged] = held  # for `record_published`


def record_published(context: dg.InitResourceContext) -> None:
    """After a step (the IO manager's teardown): make the latest materialization of each
    asset a check of the run settled here the one its published table came from.

    Otherwise a child built later records a data version it did not read (after a failed
    check), and the asset looks synced with code that was never published. That
    materialization is recorded again, runless, with its tags (data, code and input versions)
    and metadata. Not sooner: Dagster points a check's evaluation at the asset's latest
    materialization as it logs it, and a failed one must stay on the rejected version."""
    run, instance = context.run, context.instance
    if run is None or instance is None:  # not in a run
        return
    for held in _SETTLED.pop(run.run_id, {}).values():
        _record_published(instance, held, run.run_id, context.log)


def _record_published(
    instance: dg.DagsterInstance, held: _Held, run_id: str, log: dg.DagsterLogManager | None
) -> None:
    name = held.asset_key.to_user_string() + (f"[{held.partition}]" if held.partition else "")
    published = staging.written_by(held.version.published)
    if published is None:  # nothing published yet (or a table written before stamps)
        return
    history = _materializations(instance, held.asset_key, held.partition)
    latest = next(history, None)
    if latest is None or _made_by(latest) == published:
        return
    made = next((r for r in history if r.run_id == published), None)
    if made is None:
        if log:
            log.warning(f"{name}: run {published} made the published table, but it is gone")
        return
    rejected = held.version.run_id if held.version.run_id != published else None
    note = f"run {published}'s version, recorded again: " + (
        f"it stays published, run {rejected}'s failed a blocking check"
        if rejected
        else f"published by run {run_id}"
    )
    tags = {**(made.asset_materialization.tags or {}), PUBLISHED_RUN_TAG: published}
    if rejected:
        tags[REJECTED_RUN_TAG] = rejected
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            asset_key=held.asset_key,
            partition=held.partition,
            description=note,
            metadata=made.asset_materialization.metadata,
            tags=tags,
        )
    )
    if log:
        log.info(f"{name}: {note}")


def _materializations(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None
) -> Iterator[dg.EventLogRecord]:
    """The asset's (partition's) materialization records, newest first."""
    records_filter = dg.AssetRecordsFilter(
        asset_key=key, asset_partitions=[partition] if partition is not None else None
    )
    cursor = None
    while True:
        page = instance.fetch_materializations(records_filter, limit=10, cursor=cursor)
        yield from page.records
        if not page.has_more:
            return
        cursor = page.cursor


def _made_by(record: dg.EventLogRecord) -> str:
    """The run that materialized the table this record describes."""
    return (record.asset_materialization.tags or {}).get(PUBLISHED_RUN_TAG) or record.run_id


def _check_key(
    result: dg.AssetCheckResult, selected: AbstractSet[dg.AssetCheckKey]
) -> dg.AssetCheckKey | None:
    if result.asset_key is not None and result.check_name is not None:
        return dg.AssetCheckKey(result.asset_key, result.check_name)
    matching = [
        key
        for key in selected
        if result.check_name in (None, key.name) and result.asset_key in (None, key.asset_key)
    ]
    return matching[0] if len(matching) == 1 else None


def _current_context() -> dg.AssetExecutionContext | dg.AssetCheckExecutionContext | None:
    getters: tuple[Callable[[], dg.AssetExecutionContext | dg.AssetCheckExecutionContext], ...]
    getters = (dg.AssetExecutionContext.get, dg.AssetCheckExecutionContext.get)
    for get in getters:
        try:
            return get()
        except dg.DagsterInvariantViolationError:
            continue
    return None
