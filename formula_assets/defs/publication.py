"""When a table becomes what readers see: the Dagster side of `core.staging`.

A table is gated by the blocking checks of its asset that run later in the same run, and by
the blocking checks its own step evaluates (in-step checks judge every table the step
writes: `opt_graphs` and `rejected_formulae` are published together or not at all). The IO
manager stages a gated table and holds it for the step; a step that loads a staged version
holds it too. `record` (called by `defs.checks.check_result`) marks a settled check on the
versions its step holds, and the check that completes the set publishes. Dagster lets
downstream steps run after a failed check of WARN severity, so such a failure settles it too.

Outside every code version, like `defs.checks`: it decides when data is shown, never what
it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from collections.abc import Set as AbstractSet

import dagster as dg
from dagster._core.execution.context.output import RUN_ID_PLACEHOLDER
from upath import UPath

from formula_assets.core import staging

# (run id, step key) → the staged versions that step wrote or read, by staged path.
_HELD: dict[tuple[str, str], dict[str, staging.StagedVersion]] = {}


def check_id(key: dg.AssetCheckKey) -> str:
    """`asset:check`: check names are unique per asset only."""
    return key.to_user_string()


def gating_checks(context: dg.OutputContext) -> list[str]:
    """The blocking checks that must pass before this output is published: empty when the
    run evaluates none (the table is then published at once)."""
    try:
        step = context.step_context
    except dg.DagsterInvariantViolationError:  # an IO manager called outside a run
        return []
    if not context.has_asset_key:
        return []
    layer = step.job_def.asset_layer
    graph = layer.asset_graph  # the run's selection: checks left out of it are not here
    # The run's steps (a re-execution may run only some); a step's own plan, as a worker
    # process of the multiprocess executor sees it, would hold that step alone.
    to_run = step.dagster_run.step_keys_to_execute
    current = _current_context()
    own = current.op_execution_context.selected_asset_check_keys if current else set()
    gating = []
    for key in graph.asset_check_keys:
        if not graph.get_check_spec(key).blocking:
            continue
        if key in own or (
            key.asset_key == context.asset_key
            and (to_run is None or str(layer.get_op_output_handle(key).node_handle) in to_run)
        ):
            gating.append(check_id(key))
    return sorted(gating)


def hold(context: dg.InputContext | dg.OutputContext, version: staging.StagedVersion) -> None:
    """Remember a staged version for the step, so its checks can settle it."""
    step = context.step_context
    _HELD.setdefault((step.run_id, step.step.key), {})[str(version.table)] = version


def release(context: dg.InputContext, version: staging.StagedVersion) -> None:
    """Forget a version that is no longer staged (published, or swept meanwhile)."""
    step = context.step_context
    _HELD.get((step.run_id, step.step.key), {}).pop(str(version.table), None)


def source_run(context: dg.InputContext) -> str | None:
    """The run whose staged version this input should read, if any.

    Within a run (or a re-execution) it is the run that produced the upstream output. A check
    run on its own judges the asset's latest materialization, so it reads that run's version
    while it is still staged (and publishes it if the check now passes). Any other step that
    loads from another run reads the published table."""
    try:
        step = context.step_context
    except dg.DagsterInvariantViolationError:
        return None
    upstream = context.upstream_output
    with contextlib.suppress(dg.DagsterInvariantViolationError):  # no run id: not from a run
        if upstream is not None and upstream.run_id != RUN_ID_PLACEHOLDER:
            return upstream.run_id
    current = _current_context()
    if not isinstance(current, dg.AssetCheckExecutionContext):
        return None
    if context.asset_key not in {key.asset_key for key in current.selected_asset_check_keys}:
        return None
    partitions = context.asset_partition_keys if context.has_asset_partitions else [None]
    if len(partitions) != 1:
        return None
    records = step.instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=context.asset_key,
            asset_partitions=[partitions[0]] if partitions[0] is not None else None,
        ),
        limit=1,
    ).records
    return records[0].run_id if records else None


def sweep(context: dg.OutputContext, root: UPath, path: UPath) -> None:
    """Before `path` is written: remove its staged versions left by finished runs. A run the
    instance does not know may belong to another instance sharing the data lake, so its
    versions are left alone."""
    try:
        step = context.step_context
    except dg.DagsterInvariantViolationError:
        return
    instance = step.instance

    def finished(run_id: str) -> bool:
        run = instance.get_run_by_id(run_id)
        return run is not None and run.is_finished

    staging.sweep(root, path, step.run_id, finished)


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
    for staged, version in list(versions.items()):
        if settled and staging.record_pass(version, name):
            op.log.info(f"{name} passed: published {version.published}")
            versions.pop(staged, None)
        elif not settled and name in (staging.required_checks(version) or []):
            op.log.warning(
                f"{name} failed: {version.published} keeps its last published version; "
                f"the rejected one stays at {version.table}"
            )


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
