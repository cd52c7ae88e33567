"""When a table becomes what readers see: the Dagster side of `core.staging`
(`docs/publication.md` walks through it).

Who does what, and when:

1. **Staging** (the data lake IO manager, when a step writes a table). A table that blocking
   checks of the same run will judge (`gating_checks`: its asset's blocking checks the run
   executes, and the checks its own step evaluates, which judge every table the step writes:
   `opt_graphs` and `rejected_formulae` are published together or not at all) is staged, not
   published. The IO manager's `Publication` holds the staged version; so does a step that
   reads one (a check step).
2. **Settling** (the check, explicitly). Every check ends with `return settle(result)`: a
   pass marks the check passed on the versions its step holds, and the pass that completes a
   version's set publishes it (`staging.record_pass`); a failure leaves the last good version
   published. Dagster lets downstream steps run after a failed check of WARN severity, so such
   a failure settles it like a pass. A gating check whose step took a version and is done
   without settling it (it raised) rejects it like a failure.
3. **Recording the published version** (the IO manager, after its step or run:
   `Publication.record_published`). Dagster takes an asset's latest materialization (its
   data, code and input versions) as what the asset is, and a child records it as what it
   read. When a check leaves an older table published (it failed or raised), or publishes
   one another run materialized (run on its own), that is not the one the published table
   came from, so that materialization is recorded again.

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
# The resource key of the data lake IO manager, whose `Publication` a check settles.
IO_MANAGER_KEY = "io_manager"

CurrentContext = dg.AssetExecutionContext | dg.AssetCheckExecutionContext


@dataclass(frozen=True)
class Staged:
    """A staged version, and the asset (partition) it is a materialization of."""

    version: staging.StagedVersion
    asset_key: dg.AssetKey
    partition: str | None


class Publication:
    """The gated versions one data lake IO manager answers for: those its steps staged or
    read (`held`), the gating checks of those steps that have not settled them yet
    (`unsettled`), and those a check of its run settled (`settled`, to be recorded after).

    The IO manager lives as long as its resources: one run when the run's steps share a
    process, one step in a step process of its own. Its steps see the same versions: a check
    settles only those whose manifest names it, so holding them per run, not per step, is
    enough."""

    def __init__(self) -> None:
        self.held: dict[str, Staged] = {}  # by staged table path
        self.unsettled: dict[str, set[str]] = {}
        self.settled: dict[str, Staged] = {}

    def stage(
        self, context: dg.OutputContext, root: UPath, path: UPath, table: pa.Table
    ) -> staging.StagedVersion | None:
        """Stage `table` when checks of the run gate it (and hold it); None when nothing gates
        it and it is to be published at once."""
        checks = gating_checks(context)
        if not checks:
            return None
        version = staging.staged_version(root, path, context.run_id)
        staging.stage(version, table, checks)
        self._hold(context, version)
        context.log.info(
            f"staged at {version.table}; published at {path} once {', '.join(checks)} pass"
        )
        return version

    def read_staged(self, context: dg.InputContext, root: UPath, path: UPath) -> pa.Table | None:
        """The version of the run that made this input while it awaits its checks (held for
        them); None when the input is to be read from its published path."""
        run_id = source_run(context)
        if run_id is None:
            return None
        version = staging.staged_version(root, path, run_id)
        table = staging.read_staged(version)
        if table is None:  # published or swept meanwhile
            self.held.pop(str(version.table), None)
            return None
        self._hold(context, version)
        context.log.info(f"reading the staged version {version.table}")
        return table

    def _hold(
        self, context: dg.InputContext | dg.OutputContext, version: staging.StagedVersion
    ) -> None:
        keys = context.asset_partition_keys if context.has_asset_partitions else []
        partition = keys[0] if len(keys) == 1 else None
        self.held[str(version.table)] = Staged(version, context.asset_key, partition)
        current = _current_context()
        if current is not None:  # the step's own checks that gate the version: each must settle
            own = {check_id(key) for key in current.selected_asset_check_keys}
            gating = own.intersection(staging.required_checks(version) or [])
            self.unsettled.setdefault(str(version.table), set()).update(gating)

    def settle(self, context: CurrentContext, result: dg.AssetCheckResult) -> None:
        """The check of `result` settles the versions held here whose manifest names it;
        each version whose gating checks have now all passed is published."""
        op = context.op_execution_context
        key = _check_key(result, op.selected_asset_check_keys)
        if key is None:
            return
        name = check_id(key)
        passed = result.passed or result.severity == dg.AssetCheckSeverity.WARN
        for staged, held in list(self.held.items()):
            version = held.version
            self.unsettled.get(staged, set()).discard(name)
            if passed and staging.record_pass(version, name):
                op.log.info(f"{name} passed: published {version.published}")
                self.held.pop(staged, None)
            elif not passed and name in (staging.required_checks(version) or []):
                op.log.warning(
                    f"{name} failed: {version.published} keeps its last published version; "
                    f"the rejected one stays at {version.table}"
                )
            else:
                continue
            self.settled[staged] = held

    def record_published(self, context: dg.InitResourceContext) -> None:
        """After the step (or run) of this IO manager: make the latest materialization of each
        asset a check settled here the one its published table came from.

        Otherwise a child built later records a data version it did not read (after a failed
        check), and the asset looks synced with code that was never published. That
        materialization is recorded again, runless, with its tags (data, code and input
        versions) and metadata. Not sooner: Dagster points a check's evaluation at the asset's
        latest materialization as it logs it, and a failed one must stay on the rejected
        version."""
        run, instance = context.run, context.instance
        if run is None or instance is None:  # not in a run
            return
        self._reject_unsettled(context.log)
        settled, self.settled = list(self.settled.values()), {}
        for held in settled:
            _record_published(instance, held, run.run_id, context.log)

    def _reject_unsettled(self, log: dg.DagsterLogManager | None) -> None:
        """A gating check whose step took a version (read it, or wrote it as an in-step check)
        and is done without settling it raised: it rejects the version like a failure (the
        version cannot be published without its pass)."""
        unsettled, self.unsettled = self.unsettled, {}
        for staged, names in unsettled.items():
            held = self.held.get(staged)
            if not names or held is None or staging.required_checks(held.version) is None:
                continue  # all settled, or published or swept meanwhile
            if log:
                log.warning(
                    f"{', '.join(sorted(names))} ended without a result: "
                    f"{held.version.published} keeps its last published version; "
                    f"the rejected one stays at {held.version.table}"
                )
            self.settled[staged] = held


def settle(result: dg.AssetCheckResult) -> dg.AssetCheckResult:
    """Settle `result` on the tables it gates, and return it: what every check returns.

    A pass may publish a staged table (the last of its gating checks to pass does); a failure
    keeps the last good one published. Called outside a run, or in a run without the data
    lake IO manager, it changes nothing."""
    context = _current_context()
    if context is None:  # a check function called directly, outside a run
        return result
    manager = getattr(context.resources, IO_MANAGER_KEY, None)
    publication = getattr(manager, "publication", None)
    if isinstance(publication, Publication):
        publication.settle(context, result)
    return result


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


def _record_published(
    instance: dg.DagsterInstance, held: Staged, run_id: str, log: dg.DagsterLogManager | None
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


def _current_context() -> CurrentContext | None:
    getters: tuple[Callable[[], CurrentContext], ...]
    getters = (dg.AssetExecutionContext.get, dg.AssetCheckExecutionContext.get)
    for get in getters:
        try:
            return get()
        except dg.DagsterInvariantViolationError:
            continue
    return None
