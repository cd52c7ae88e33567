"""One step, one build at a time, whichever entry point started it.

A refresh started while another entry point (here `dg launch`, as the UI or the automation
sensor would) is building the same step waits for that run instead of starting a second one
beside it. What counts as being built elsewhere: a run whose process lives, a queued run or a
backfill while a daemon runs.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import pytest
from dagster._core.definitions.assets.graph.asset_graph_subset import AssetGraphSubset
from dagster._core.events import DagsterEvent, DagsterEventType, StepMaterializationData
from dagster._core.execution.backfill import PartitionBackfill
from dagster._daemon.types import DaemonHeartbeat

from formula_assets.cli import inflight
from formula_assets.cli.inflight import building_elsewhere
from formula_assets.cli.runs import Job
from formula_assets.defs.plan import Target
from formula_assets_tests.support.automation import definitions
from formula_assets_tests.support.pipeline import CLI, ROOT, ran, sparql_pipeline
from formula_assets_tests.support.recorded_runs import KEY, a_run, dead_pid
from formula_assets_tests.support.sparql_server import FakeWdqs, Reply, is_detail_query


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def planned_runs(instance: dg.DagsterInstance, key: dg.AssetKey) -> set[str]:
    """Every run that was created to build `key` (each announces it when created)."""
    records = instance.event_log_storage.get_event_records(
        dg.EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION_PLANNED, asset_key=key)
    )
    return {r.run_id for r in records}


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


@pytest.mark.slow
def test_refresh_waits_for_a_step_another_entry_point_is_building(
    tmp_path: Path, sparql_server: FakeWdqs
) -> None:
    release = threading.Event()

    def held(_query: str, reply: Reply) -> Reply:
        release.wait(120)  # the other run stays inside wikidata_formulae until released
        return reply

    sparql_server.script(held, when=is_detail_query)
    run = sparql_pipeline(tmp_path, sparql_server.endpoint, min_formulae=1)
    assert run.run("home").returncode == 0
    env = {**run.env, "VIRTUAL_ENV": sys.prefix}
    dg_bin = Path(sys.executable).parent / "dg"
    launch_log, refresh_log = tmp_path / "launch.log", tmp_path / "refresh.log"
    processes: list[subprocess.Popen] = []
    try:
        with launch_log.open("w") as out:
            other = subprocess.Popen(
                [str(dg_bin), "launch", "--assets", "wikidata_formulae"],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        processes.append(other)
        with dg.DagsterInstance.from_config(str(run.home)) as instance:
            wait_for(sparql_server.detail_requests, 120, "the other run to query the endpoint")
            (building,) = planned_runs(instance, KEY)
            assert instance.get_run_by_id(building).status == dg.DagsterRunStatus.STARTED

            with refresh_log.open("w") as out:
                refresh = subprocess.Popen(
                    [str(CLI), "refresh"],
                    cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip
            processes.append(refresh)
            waiting = f"waiting for run {building}"

            def said_or_ended() -> bool:
                return waiting in refresh_log.read_text() or refresh.poll() is not None

            wait_for(said_or_ended, 120, "the refresh to decide")
            output = refresh_log.read_text()
            assert waiting in output, output[-3000:]
            (line,) = [x for x in output.splitlines() if waiting in x]
            assert line.endswith(
                "(the UI or a dg/dagster command, started), which is already building "
                "wikidata_formulae"
            ), line
            time.sleep(3)  # it keeps waiting: no second run of the step …
            assert refresh.poll() is None, refresh_log.read_text()[-3000:]
            assert planned_runs(instance, KEY) == {building}
            assert len(sparql_server.detail_requests()) == 1

            release.set()  # … and once the other run has built it, the refresh goes on
            wait_for(lambda: ran(refresh_log.read_text()), 120, "the refresh's next step")
            output = refresh_log.read_text()
            assert "wikidata_formulae" not in ran(output), output[-3000:]
            assert "opt_graphs" in ran(output)
            assert "looking again" in output
            assert planned_runs(instance, KEY) == {building}
            materialized = instance.fetch_materializations(KEY, limit=10).records
            assert [r.run_id for r in materialized] == [building]
    finally:
        release.set()
        for process in processes:
            stop(process)


# ---------------------------------------------------------------- what counts as in flight


def test_a_started_run_counts_while_its_process_lives(small) -> None:
    defs, instance = small
    alive = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())
    gone = a_run(defs, instance, dg.DagsterRunStatus.STARTED, dead_pid())
    busy = building_elsewhere(defs, instance, [Target(KEY)])
    assert busy[Target(KEY)].id == alive
    assert str(busy[Target(KEY)]) == f"run {alive} (the UI or a dg/dagster command, started)"
    instance.report_run_canceled(instance.get_run_by_id(alive))
    assert building_elsewhere(defs, instance, [Target(KEY)]) == {}  # `gone` is not waited for
    assert gone


def test_queued_runs_and_backfills_count_only_while_a_daemon_runs(small) -> None:
    defs, instance = small
    queued = a_run(defs, instance, dg.DagsterRunStatus.QUEUED, os.getpid())
    instance.add_run_tags(queued, {"dagster/sensor_name": "formula_assets_automation"})
    graph = defs.resolve_asset_graph()
    backfill = PartitionBackfill.from_asset_graph_subset(
        backfill_id="bkfl0001",
        backfill_timestamp=time.time(),
        tags={"dagster/from_automation_condition": "true"},
        dynamic_partitions_store=instance,
        asset_graph_subset=AssetGraphSubset.from_asset_keys({dg.AssetKey("opt_graphs")}, graph),
        title=None,
        description=None,
        run_config=None,
    )
    instance.add_backfill(backfill)
    targets = [Target(KEY), Target(dg.AssetKey("opt_graphs")), Target(dg.AssetKey("cv_folds"))]
    assert building_elsewhere(defs, instance, targets) == {}  # no daemon: nothing moves them
    instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "QUEUED_RUN_COORDINATOR", None))
    busy = building_elsewhere(defs, instance, targets)
    assert {t.key.to_user_string(): str(b) for t, b in busy.items()} == {
        "wikidata_formulae": f"run {queued} (sensor formula_assets_automation, queued)",
        "opt_graphs": "backfill bkfl0001 (the automation sensor, requested)",
    }


def test_a_stale_daemon_heartbeat_moves_nothing(small) -> None:
    """A heartbeat stays in the instance after its daemon (`dg dev`) stops: one older than
    the limit must not make queued runs look as if something would start them."""
    defs, instance = small
    a_run(defs, instance, dg.DagsterRunStatus.QUEUED, os.getpid())
    old = time.time() - inflight.DAEMON_HEARTBEAT_S - 30
    instance.add_daemon_heartbeat(DaemonHeartbeat(old, "QUEUED_RUN_COORDINATOR", None))
    assert not inflight.daemon_alive(instance, time.time())
    assert building_elsewhere(defs, instance, [Target(KEY)]) == {}
    recent = time.time() - inflight.DAEMON_HEARTBEAT_S + 30
    instance.add_daemon_heartbeat(DaemonHeartbeat(recent, "QUEUED_RUN_COORDINATOR", None))
    assert inflight.daemon_alive(instance, time.time())
    assert set(building_elsewhere(defs, instance, [Target(KEY)])) == {Target(KEY)}


def test_a_run_not_started_counts_for_its_grace_only(small, monkeypatch) -> None:
    """A run created in-process is NOT_STARTED for a moment: waited for then, not after."""
    defs, instance = small
    job = defs.resolve_implicit_global_asset_job_def()
    run = instance.create_run_for_job(job, asset_selection=frozenset({KEY}))
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.NOT_STARTED
    busy = building_elsewhere(defs, instance, [Target(KEY)])
    assert busy[Target(KEY)].id == run.run_id and busy[Target(KEY)].state == "not_started"
    created = time.time()

    def seen_after(seconds: float) -> bool:
        monkeypatch.setattr(inflight, "time", SimpleNamespace(time=lambda: created + seconds))
        return bool(building_elsewhere(defs, instance, [Target(KEY)]))

    assert seen_after(inflight.NOT_STARTED_GRACE_S - 5)
    assert not seen_after(inflight.NOT_STARTED_GRACE_S + 5)


def test_what_a_run_already_built_is_not_waited_for(small) -> None:
    """A live run that planned a target and has materialized it builds it no more."""
    defs, instance = small
    run_id = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())
    other = dg.AssetKey("opt_graphs")
    assert set(building_elsewhere(defs, instance, [Target(KEY), Target(other)])) == {Target(KEY)}
    job = defs.resolve_implicit_global_asset_job_def()
    done = DagsterEvent(
        DagsterEventType.ASSET_MATERIALIZATION.value,
        job.name,
        event_specific_data=StepMaterializationData(dg.AssetMaterialization(KEY)),
    )
    instance.report_dagster_event(done, run_id)
    assert building_elsewhere(defs, instance, [Target(KEY)]) == {}


# ---------------------------------------------------------------- who started a run


@pytest.mark.parametrize(
    ("tags", "said"),
    [
        ({"formula_assets/refresh": "true"}, "another formula-assets refresh"),
        ({"dagster/sensor_name": "nightly"}, "sensor nightly"),
        ({"dagster/from_automation_condition": "true"}, "the automation sensor"),
        ({"dagster/schedule_name": "weekly_probe"}, "schedule weekly_probe"),
        ({"dagster/backfill": "bkfl0002"}, "backfill bkfl0002"),
        ({}, "the UI or a dg/dagster command"),
        ({"formula_assets/refresh": ""}, "the UI or a dg/dagster command"),  # an empty tag: unset
        # A refresh's run launched by a schedule is the refresh's; a sensor's backfill the sensor's.
        (
            {"formula_assets/refresh": "true", "dagster/schedule_name": "weekly_probe"},
            "another formula-assets refresh",
        ),
        ({"dagster/sensor_name": "s", "dagster/backfill": "b"}, "sensor s"),
        (
            {"dagster/from_automation_condition": "true", "dagster/backfill": "b"},
            "the automation sensor",
        ),
        ({"dagster/schedule_name": "w", "dagster/backfill": "b"}, "schedule w"),
    ],
)
def test_the_origin_of_a_run_is_read_from_its_tags(tags: dict[str, str], said: str) -> None:
    assert inflight.origin(tags) == said


def test_a_daemon_counts_as_alive_only_within_the_heartbeat_limit(small) -> None:
    _defs, instance = small
    now = 1_000_000.0
    assert not inflight.daemon_alive(instance, now)  # no heartbeat at all
    instance.add_daemon_heartbeat(DaemonHeartbeat(now - 119.0, "SENSOR", None))
    assert inflight.daemon_alive(instance, now)
    assert not inflight.daemon_alive(instance, now + 1.0)  # exactly 120 s old: gone


def test_a_run_not_started_is_waited_for_for_one_minute(small, monkeypatch) -> None:
    defs, instance = small
    job = defs.resolve_implicit_global_asset_job_def()
    run = instance.create_run_for_job(job, asset_selection=frozenset({KEY}))
    created = instance.get_run_record_by_id(run.run_id).create_timestamp.timestamp()

    def seen_after(seconds: float) -> bool:
        monkeypatch.setattr(inflight, "time", SimpleNamespace(time=lambda: created + seconds))
        return bool(building_elsewhere(defs, instance, [Target(KEY)]))

    assert seen_after(59.0)
    assert not seen_after(61.0)


def test_the_oldest_of_two_runs_building_a_target_is_named(small) -> None:
    defs, instance = small
    first = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())
    second = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())

    busy = building_elsewhere(defs, instance, [Target(KEY)])

    assert busy[Target(KEY)].id == first != second
    # A builder is a value: found twice, it is one (the refresh announces each builder once).
    again = building_elsewhere(defs, instance, [Target(KEY)])[Target(KEY)]
    assert len({busy[Target(KEY)], again}) == 1


def test_runs_elsewhere_are_waited_for_whatever_their_pid(tmp_path, sparql_server) -> None:
    """An instance whose runs need not run on this machine (not SQLite: here in memory): a
    started run whose pid is dead here may live on another machine, so it still counts."""
    defs = definitions(tmp_path / "lake", sparql_server.endpoint)
    with dg.DagsterInstance.ephemeral() as instance:
        elsewhere = a_run(defs, instance, dg.DagsterRunStatus.STARTED, dead_pid())
        assert not inflight.run_process_gone(instance, elsewhere)
        assert building_elsewhere(defs, instance, [Target(KEY)])[Target(KEY)].id == elsewhere


def test_a_run_being_canceled_still_counts_until_it_has_stopped(small) -> None:
    """Canceling stops a run's steps only when they notice: until then it still builds."""
    defs, instance = small
    run_id = a_run(defs, instance, dg.DagsterRunStatus.STARTED, os.getpid())
    instance.report_run_canceling(instance.get_run_by_id(run_id))
    assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.CANCELING

    busy = building_elsewhere(defs, instance, [Target(KEY)])

    assert str(busy[Target(KEY)]) == f"run {run_id} (the UI or a dg/dagster command, canceling)"


def test_a_jobs_targets_are_its_assets_in_its_partition() -> None:
    graphs = dg.AssetKey("opt_graphs"), dg.AssetKey("rejected_formulae")
    assert inflight.job_targets(Job(("opt_graphs", "rejected_formulae"))) == [
        Target(graphs[0]),
        Target(graphs[1]),
    ]
    assert inflight.job_targets(Job(("fold_models",), "3|bm25")) == [
        Target(dg.AssetKey("fold_models"), "3|bm25")
    ]
