"""What the project relies on in Dagster's internals, pinned: one test per function of
`defs.dagster_internals`, named after it, on small real definitions and instances. A Dagster
upgrade that changes one of these fails here, by name.

And the rule that keeps it so: no other module of the package touches `dagster._…`.
"""

import ast
import inspect
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from dagster._core.definitions.assets.graph.asset_graph_subset import AssetGraphSubset
from dagster._core.events import AssetMaterializationPlannedData
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill

import formula_assets
from formula_assets.defs import dagster_internals as internals

PACKAGE = Path(formula_assets.__file__).resolve().parent
INTERNALS = PACKAGE / "defs" / "dagster_internals.py"


@pytest.fixture
def instance() -> Iterator[dg.DagsterInstance]:
    """A fresh instance in SQLite, as the project's, for tests that read its history."""
    with dg.instance_for_test() as instance:
        yield instance


@pytest.fixture(scope="module")
def shared() -> Iterator[dg.DagsterInstance]:
    """One instance for the tests that look only at their own run."""
    with dg.instance_for_test() as instance:
        yield instance


# ---------------------------------------------------------------- the rule


def private_dagster_uses(path: Path) -> list[str]:
    """`dagster._…` imports, `from dagster import _…`, and `dg._…` / `dagster._…` attributes."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("dagster._")]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("dagster._"):
                found.append(node.module)
            elif node.module == "dagster":
                found += [f"dagster.{a.name}" for a in node.names if a.name.startswith("_")]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("dg", "dagster")
            and node.attr.startswith("_")
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return [f"{path.relative_to(PACKAGE.parent)}:{name}" for name in found]


def test_no_other_module_uses_dagster_internals() -> None:
    found = [
        use
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != INTERNALS
        for use in private_dagster_uses(path)
    ]
    assert found == []
    assert private_dagster_uses(INTERNALS)  # the check sees them where they are


def test_every_function_is_pinned_by_a_test_of_its_name() -> None:
    functions = {
        name
        for name, value in vars(internals).items()
        if inspect.isfunction(value)
        and value.__module__ == internals.__name__
        and not name.startswith("_")
    }
    tests = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert functions - tests == set()


# ---------------------------------------------------------------- definitions


@dg.asset
def plain() -> int:
    return 1


@dg.multi_asset(specs=[dg.AssetSpec("left"), dg.AssetSpec("right")])
def pair() -> Iterator[dg.MaterializeResult]:
    yield dg.MaterializeResult(asset_key="left")
    yield dg.MaterializeResult(asset_key="right")


@dg.observable_source_asset
def watched() -> dg.DataVersion:
    return dg.DataVersion("1")


def test_defining_module() -> None:
    assert internals.defining_module(plain) == __name__
    assert internals.defining_module(pair) == __name__
    mapped = plain.map_asset_specs(lambda spec: spec.replace_attributes(owners=["team:x"]))
    assert internals.defining_module(mapped) == __name__


def test_map_asset_specs() -> None:
    defs = dg.Definitions(assets=[plain, pair, watched], jobs=[dg.define_asset_job("all")])
    with pytest.raises(dg.DagsterInvariantViolationError):  # why the public one is not used
        defs.map_resolved_asset_specs(func=lambda spec: spec)
    mapped = internals.map_asset_specs(
        defs, lambda spec: spec.replace_attributes(owners=["team:x"], code_version="7")
    )
    graph = mapped.resolve_asset_graph()
    for name in ("plain", "left", "right"):
        node = graph.get(dg.AssetKey(name))
        assert (list(node.owners), node.code_version) == (["team:x"], "7"), name
    assert graph.get(dg.AssetKey("watched")).is_observable  # passed through untouched
    assert list(graph.get(dg.AssetKey("watched")).owners) == []
    assert mapped.resolve_job_def("all")  # the rest kept


LOCATION = """
import dagster as dg

PARTS = dg.StaticPartitionsDefinition(["a", "b"])


@dg.asset
def whole() -> None: ...


@dg.asset(partitions_def=PARTS)
def parted() -> None: ...


defs = dg.Definitions(assets=[whole, parted])
"""


def test_location_asset_job(tmp_path: Path, instance: dg.DagsterInstance) -> None:
    """The implicit job of a code location, rebuilt from its module in the step processes
    (the default executor runs each step in a process of its own)."""
    module = f"location_{uuid.uuid4().hex}"
    (tmp_path / f"{module}.py").write_text(LOCATION)
    job = internals.location_asset_job(module, "defs", str(tmp_path))
    definition = job.get_definition()
    keys = [dg.AssetKey("parted")]
    tags = definition.get_tags_for_partition_key("b", selected_asset_keys=keys)
    result = dg.execute_job(job, instance, tags=tags, asset_selection=keys)
    assert result.success
    [event] = result.get_asset_materialization_events()
    assert (event.asset_key, event.partition) == (dg.AssetKey("parted"), "b")
    whole = dg.execute_job(job, instance, asset_selection=[dg.AssetKey("whole")])
    assert [e.asset_key for e in whole.get_asset_materialization_events()] == [dg.AssetKey("whole")]


# ---------------------------------------------------------------- staleness


def lineage(version: str) -> list[dg.AssetsDefinition]:
    @dg.asset(code_version=version)
    def parent() -> dg.Output[int]:
        return dg.Output(1, data_version=dg.DataVersion(f"data-{version}"))

    @dg.asset(code_version="1")
    def child(parent: int) -> int:
        return parent

    return [parent, child]


def test_staleness_reader(instance: dg.DagsterInstance) -> None:
    def status(assets: list[dg.AssetsDefinition]) -> dict[str, internals.Staleness]:
        graph = dg.Definitions(assets=assets).resolve_asset_graph()
        read = internals.staleness_reader(instance, graph)
        return {name: read(dg.AssetKey(name), None) for name in ("parent", "child")}

    first = lineage("1")
    assert {k: s.status for k, s in status(first).items()} == {
        "parent": "MISSING",
        "child": "MISSING",
    }
    assert dg.materialize(first, instance=instance).success
    assert status(first) == {
        "parent": internals.Staleness("FRESH"),
        "child": internals.Staleness("FRESH"),
    }

    second = lineage("2")  # a new code version: the parent is stale, its child not yet
    assert status(second) == {
        "parent": internals.Staleness("STALE", (("has a new code version", None),)),
        "child": internals.Staleness("FRESH"),
    }
    assert dg.materialize(second, instance=instance, selection=["parent"]).success
    assert status(second)["child"] == internals.Staleness(
        "STALE", (("has a new dependency data version", (dg.AssetKey("parent"), None)),)
    )


def test_evaluation_instance(instance: dg.DagsterInstance) -> None:
    """A condition written in Python sees the instance it is evaluated against, and the
    asset graph its context offers is an `AssetGraph` as `resolve_asset_graph` gives."""
    seen: list[tuple[dg.DagsterInstance, object]] = []

    class Spy(dg.AutomationCondition):
        @property
        def name(self) -> str:
            return "spy"

        def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
            seen.append((internals.evaluation_instance(context), context.asset_graph))
            return dg.AutomationResult(context=context, true_subset=context.candidate_subset)

    @dg.asset(automation_condition=Spy())
    def spied() -> None: ...

    defs = dg.Definitions(assets=[spied])
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert result.get_num_requested(dg.AssetKey("spied")) == 1
    assert seen and all(i is instance for i, _ in seen)
    assert all(isinstance(g, internals.AssetGraph) for _, g in seen)
    assert isinstance(defs.resolve_asset_graph(), internals.AssetGraph)


# ---------------------------------------------------------------- runs and backfills

FOLDS = dg.StaticPartitionsDefinition(["1", "2", "3"])


@dg.asset(partitions_def=FOLDS, backfill_policy=dg.BackfillPolicy.single_run())
def per_fold(context: dg.AssetExecutionContext) -> None:
    context.log.info(f"{context.partition_keys}")


def planned(instance: dg.DagsterInstance, run_id: str) -> list[str | None]:
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED
    ).records
    return sorted(
        p
        for r in records
        if r.event_log_entry.dagster_event is not None
        for p in internals.planned_partitions(r.event_log_entry.dagster_event)
    )


def test_planned_partitions(shared: dg.DagsterInstance) -> None:
    instance = shared
    one = dg.materialize([per_fold], instance=instance, partition_key="2")
    assert planned(instance, one.run_id) == ["2"]
    span = dg.materialize(
        [per_fold],
        instance=instance,
        tags={
            "dagster/asset_partition_range_start": "1",
            "dagster/asset_partition_range_end": "3",
        },
    )
    assert planned(instance, span.run_id) == ["1", "2", "3"]  # one run, a range
    # Storage that supports it (PostgreSQL) records a range as one event with a subset.
    ranged = dg.DagsterEvent.build_asset_materialization_planned_event(
        "job",
        "per_fold",
        AssetMaterializationPlannedData(
            dg.AssetKey("per_fold"), partitions_subset=FOLDS.subset_with_partition_keys(["1", "3"])
        ),
    )
    assert sorted(internals.planned_partitions(ranged)) == ["1", "3"]
    whole = dg.materialize([plain], instance=instance)
    assert [
        internals.planned_partitions(r.event_log_entry.dagster_event)  # type: ignore[arg-type]
        for r in instance.get_records_for_run(
            whole.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION_PLANNED
        ).records
    ] == [[None]]


def test_runs_on_this_machine(shared: dg.DagsterInstance) -> None:
    instance = shared
    assert internals.runs_on_this_machine(instance)  # SQLite: no other machine shares it
    assert not internals.runs_on_this_machine(dg.DagsterInstance.ephemeral())


def test_requested_asset_backfills(instance: dg.DagsterInstance) -> None:
    defs = dg.Definitions(assets=[plain, per_fold])
    graph = defs.resolve_asset_graph()

    def add(backfill_id: str, keys: set[dg.AssetKey]) -> PartitionBackfill:
        backfill = PartitionBackfill.from_asset_graph_subset(
            backfill_id=backfill_id,
            backfill_timestamp=time.time(),
            tags={"dagster/from_automation_condition": "true"},
            dynamic_partitions_store=instance,
            asset_graph_subset=AssetGraphSubset.from_asset_keys(keys, graph),
            title=None,
            description=None,
            run_config=None,
        )
        instance.add_backfill(backfill)
        return backfill

    requested = add("requested", {dg.AssetKey("plain"), dg.AssetKey("per_fold")})
    done = add("done", {dg.AssetKey("plain")})
    instance.update_backfill(done.with_status(BulkActionStatus.COMPLETED_SUCCESS))
    [found] = internals.requested_asset_backfills(instance, graph)
    assert (found.id, found.tags) == ("requested", {"dagster/from_automation_condition": "true"})
    assert found.pending == {
        (dg.AssetKey("plain"), None),
        *((dg.AssetKey("per_fold"), fold) for fold in ("1", "2", "3")),
    }

    # Stored the older way (serialized against the definitions of its time), a backfill of an
    # asset the definitions no longer have cannot be read: it is skipped.
    data = requested.asset_backfill_data
    assert data is not None
    instance.add_backfill(
        PartitionBackfill(
            backfill_id="serialized",
            status=BulkActionStatus.REQUESTED,
            from_failure=False,
            tags={},
            backfill_timestamp=time.time(),
            serialized_asset_backfill_data=data.serialize(instance, graph),
        )
    )
    assert {b.id for b in internals.requested_asset_backfills(instance, graph)} == {
        "requested",
        "serialized",
    }
    other = dg.Definitions(assets=[plain]).resolve_asset_graph()  # `per_fold` is gone
    assert [b.id for b in internals.requested_asset_backfills(instance, other)] == ["requested"]


def test_tags_of_the_runs_dagster_launches() -> None:
    """The tag names are Dagster's own (the tests of `formula-assets refresh` and the daemon
    test use them literally)."""
    assert internals.SENSOR_TAG == "dagster/sensor_name"
    assert internals.AUTOMATION_TAG == "dagster/from_automation_condition"
    assert internals.SCHEDULE_TAG == "dagster/schedule_name"
    assert internals.BACKFILL_TAG == "dagster/backfill"


# ---------------------------------------------------------------- inside a step


class Recording(dg.IOManager):
    """Stores values in memory and records what the internals say at each call."""

    def __init__(self, seen: dict[str, Any]) -> None:
        self.seen = seen
        self.values: dict[dg.AssetKey, Any] = {}

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        name = context.asset_key.to_user_string()
        self.seen[f"in_run {name}"] = internals.in_run(context)
        if internals.in_run(context):
            self.seen[f"instance {name}"] = internals.step_instance(context)
            self.seen[f"gating {name}"] = sorted(
                k.name for k in internals.blocking_checks_in_run(context)
            )
        self.values[context.asset_key] = obj

    def load_input(self, context: dg.InputContext) -> Any:
        self.seen["in_run input"] = internals.in_run(context)
        self.seen["upstream run"] = internals.upstream_run_id(context)
        return self.values.get(context.asset_key, 0)


@dg.asset
def source() -> int:
    return 1


@dg.asset
def derived(source: int) -> int:
    return source + 1


@dg.asset_check(asset=source, blocking=True)
def source_blocking(source: int) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True)


@dg.asset_check(asset=source)
def source_warning(source: int) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True)


def run_recorded(
    instance: dg.DagsterInstance, selection: Any, manager: Recording | None = None
) -> tuple[dg.ExecuteInProcessResult, dict[str, Any]]:
    seen: dict[str, Any] = manager.seen if manager else {}
    result = dg.materialize(
        [source, derived, source_blocking, source_warning],
        instance=instance,
        resources={"io_manager": manager or Recording(seen)},
        selection=selection,
    )
    assert result.success
    return result, seen


def test_in_run(shared: dg.DagsterInstance) -> None:
    instance = shared
    _, seen = run_recorded(instance, ["source", "derived"])
    assert seen["in_run source"] and seen["in_run input"]
    manager = Recording({})
    manager.handle_output(dg.build_output_context(asset_key="source"), 1)
    manager.load_input(dg.build_input_context(asset_key=dg.AssetKey("source")))
    assert manager.seen["in_run source"] is False and manager.seen["in_run input"] is False


def test_step_instance(shared: dg.DagsterInstance) -> None:
    instance = shared
    _, seen = run_recorded(instance, ["source"])
    assert seen["instance source"] is instance


def test_upstream_run_id(shared: dg.DagsterInstance) -> None:
    instance = shared
    both, seen = run_recorded(instance, ["source", "derived"])
    assert seen["upstream run"] == both.run_id  # the parent ran in this run
    _, seen = run_recorded(instance, ["derived"])
    assert seen["upstream run"] is None  # read from storage: a stand-in upstream context


def test_blocking_checks_in_run(shared: dg.DagsterInstance) -> None:
    instance = shared
    every = dg.AssetSelection.assets("source", "derived") | dg.AssetSelection.checks_for_assets(
        "source"
    )
    _, seen = run_recorded(instance, every)
    assert seen["gating source"] == ["source_blocking"]  # blocking only
    assert seen["gating derived"] == []  # a check of another asset of the run does not gate it
    _, seen = run_recorded(instance, dg.AssetSelection.assets("source").without_checks())
    assert seen["gating source"] == []  # the run does not evaluate it


RE_EXECUTED: dict[str, Any] = {}


def recorded_job() -> dg.JobDefinition:
    """The assets and checks above as a job a re-execution rebuilds by name, in process."""
    return dg.Definitions(
        assets=[source, derived],
        asset_checks=[source_blocking, source_warning],
        jobs=[dg.define_asset_job("recorded")],
        resources={"io_manager": Recording(RE_EXECUTED)},
        executor=dg.in_process_executor,
    ).resolve_job_def("recorded")


def test_blocking_checks_in_run_of_a_re_execution(shared: dg.DagsterInstance) -> None:
    """A re-execution of the asset's step alone runs no check: none gates its output."""
    job = dg.reconstructable(recorded_job)
    first = dg.execute_job(job, shared)
    assert first.success and RE_EXECUTED["gating source"] == ["source_blocking"]
    RE_EXECUTED.clear()
    options = dg.ReexecutionOptions(first.run_id, step_selection=["source"])
    again = dg.execute_job(job, shared, reexecution_options=options)
    assert again.success and again.dagster_run.step_keys_to_execute == ["source"]
    assert RE_EXECUTED["gating source"] == []


def test_blocking_checks_in_run_of_the_step_itself(shared: dg.DagsterInstance) -> None:
    instance = shared
    seen: dict[str, Any] = {}

    @dg.multi_asset(
        outs={"table": dg.AssetOut(), "rejects": dg.AssetOut()},
        check_specs=[dg.AssetCheckSpec("table_ok", asset="table", blocking=True)],
    )
    def parse(context: dg.AssetExecutionContext) -> Iterator[object]:
        seen["own"] = frozenset(context.selected_asset_check_keys)
        yield dg.Output(1, output_name="table")
        yield dg.Output(2, output_name="rejects")
        yield dg.AssetCheckResult(passed=True, asset_key="table", check_name="table_ok")

    class Gating(Recording):
        def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
            name = context.asset_key.to_user_string()
            keys = internals.blocking_checks_in_run(context, seen["own"])
            self.seen[f"gating {name}"] = sorted(k.name for k in keys)

    assert dg.materialize([parse], instance=instance, resources={"io_manager": Gating(seen)})
    assert seen["gating table"] == seen["gating rejects"] == ["table_ok"]


# ---------------------------------------------------------------- storage


def test_escape_partition() -> None:
    assert internals.escape_partition("1|graph_text_cl") == "1|graph_text_cl"
    assert internals.escape_partition("../up") == "%2E%2E/up"
    assert internals.escape_partition("a/../b") == "a/%2E%2E/b"
    assert internals.escape_partition("my..backup") == "my..backup"


def test_atomic_slot_claims(tmp_path: Path) -> None:
    """A claim of an assigned step goes through `_claim_concurrency_slot`, and a slot row's
    `step_key` is NULL while free (the contention itself: test_deploy.py, on PostgreSQL)."""
    from dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log import (
        ConsolidatedSqliteEventLogStorage,
    )

    calls: list[tuple[str, str, str]] = []

    class Storage(internals.AtomicSlotClaims, ConsolidatedSqliteEventLogStorage):
        def _claim_concurrency_slot(self, concurrency_key: str, run_id: str, step_key: str):
            calls.append((concurrency_key, run_id, step_key))
            return super()._claim_concurrency_slot(concurrency_key, run_id, step_key)

    storage = Storage(str(tmp_path))
    storage.set_concurrency_slots("pool", 1)
    assert storage.claim_concurrency_slot("pool", "r1", "a").is_claimed
    assert calls == [("pool", "r1", "a")]
    assert not storage.claim_concurrency_slot("pool", "r2", "b").is_claimed
    [slot] = storage.get_concurrency_info("pool").claimed_slots
    assert (slot.run_id, slot.step_key) == ("r1", "a")
    storage.free_concurrency_slot_for_step("r1", "a")
    assert storage.claim_concurrency_slot("pool", "r2", "b").is_claimed
    assert calls[-1] == ("pool", "r2", "b")
