"""Refresh as Wikidata changes: the probe, declarative automation, the weekly schedule.

Runs the project's real assets, automation conditions, schedule and sensor against a local
SPARQL endpoint whose data the test changes, evaluated with Dagster's own test entry points.
"""

import dataclasses
from pathlib import Path

import dagster as dg
import pytest

from formula_assets.defs.automation import automation_sensor, weekly_probe_schedule
from formula_assets.defs.ingest.wikidata_formulae import wikidata_formulae
from formula_assets.defs.ingest.wikidata_probe import wikidata_probe
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets.defs.semantics.concept_annotations import concept_annotations
from formula_assets.defs.syntax.opt_graphs import parse_formulae
from formula_assets_tests.sparql_server import FakeWdqs, math


def definitions(lake: Path, endpoint: str, source: str = "sparql") -> dg.Definitions:
    return dg.Definitions(
        assets=[wikidata_probe, wikidata_formulae, parse_formulae, concept_annotations],
        schedules=[weekly_probe_schedule(wikidata_probe)],
        sensors=[automation_sensor()],
        resources={
            "io_manager": DataLakeIOManager(base_path=str(lake)),
            "wikidata": WikidataResource(source=source, sparql_endpoint=endpoint, max_retries=0),
        },
    )


def observe(defs: dg.Definitions, instance: dg.DagsterInstance) -> str:
    result = defs.resolve_job_def("observe_wikidata").execute_in_process(instance=instance)
    assert result.success
    record = instance.fetch_observations(dg.AssetKey("wikidata_probe"), limit=1).records[0]
    return record.asset_observation.data_version


KEYS = ("wikidata_formulae", "opt_graphs", "rejected_formulae", "concept_annotations")


def requested(result: dg.EvaluateAutomationConditionsResult) -> set[str]:
    return {key for key in KEYS if result.get_num_requested(dg.AssetKey(key))}


def materialize(defs: dg.Definitions, instance: dg.DagsterInstance, keys: set[str]) -> None:
    assets = [wikidata_formulae, parse_formulae, concept_annotations]
    result = dg.materialize(
        assets,
        selection=sorted(keys),
        instance=instance,
        resources=defs.resources,
    )
    assert result.success


@pytest.fixture
def instance():
    with dg.instance_for_test() as instance:
        yield instance


def test_a_new_wikidata_version_flows_down(
    tmp_path: Path, sparql_server: FakeWdqs, instance: dg.DagsterInstance
) -> None:
    defs = definitions(tmp_path / "lake", sparql_server.endpoint)
    first_version = observe(defs, instance)
    assert first_version.startswith("sparql-5-")

    # First evaluation: everything missing is requested at once (`eager` alone would request
    # nothing), as one backfill that runs parents before children.
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert requested(result) == set(KEYS)
    materialize(defs, instance, requested(result))
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(result) == set()

    # An unchanged probe requests nothing.
    assert observe(defs, instance) == first_version
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(result) == set()

    # Wikidata changes: a formula item is edited.
    item = next(e for e in sparql_server.world.values() if e.formulae)
    sparql_server.world[item.qid] = dataclasses.replace(
        item, formulae=(math("<mi>changed</mi>"),), modified="2026-11-30T00:00:00Z"
    )
    assert observe(defs, instance) != first_version
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(result) == {"wikidata_formulae"}
    materialize(defs, instance, {"wikidata_formulae"})
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(result) == {"opt_graphs", "rejected_formulae", "concept_annotations"}
    materialize(defs, instance, requested(result))
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(result) == set()


def test_an_identical_rebuild_stops_the_cascade(
    tmp_path: Path, sparql_server: FakeWdqs, instance: dg.DagsterInstance
) -> None:
    """Wikidata says something changed, but nothing this pipeline reads did."""
    defs = definitions(tmp_path / "lake", sparql_server.endpoint)
    observe(defs, instance)
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    materialize(defs, instance, requested(result))
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    concept = next(e for e in sparql_server.world.values() if not e.formulae)
    sparql_server.world[concept.qid] = dataclasses.replace(concept, modified="2026-12-01T00:00:00Z")
    item = next(e for e in sparql_server.world.values() if e.formulae)
    sparql_server.world[item.qid] = dataclasses.replace(item, modified="2026-12-01T00:00:00Z")
    observe(defs, instance)
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(result) == {"wikidata_formulae"}
    materialize(defs, instance, {"wikidata_formulae"})  # same content, same data version
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(result) == set()


def test_weekly_schedule_observes_the_probe(
    tmp_path: Path, sparql_server: FakeWdqs, instance: dg.DagsterInstance
) -> None:
    defs = definitions(tmp_path / "lake", sparql_server.endpoint)
    schedule = defs.resolve_schedule_def("weekly_wikidata_probe")
    assert schedule.cron_schedule == "0 4 * * 1"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    context = dg.build_schedule_context(instance=instance)
    run_requests = list(schedule.evaluate_tick(context).run_requests or [])
    assert len(run_requests) == 1
    assert schedule.job_name == "observe_wikidata"
    job = defs.resolve_job_def(schedule.job_name)
    assert job.execute_in_process(instance=instance, tags=run_requests[0].tags).success
    probes = [r for r in sparql_server.requests if "COUNT(" in r.query]
    assert len(probes) == 1 and probes[0].user_agent


def test_the_snapshot_probe_is_constant_so_nothing_rebuilds(
    tmp_path: Path, instance: dg.DagsterInstance
) -> None:
    defs = definitions(tmp_path / "lake", "http://127.0.0.1:9/unused", source="snapshot")
    version = observe(defs, instance)
    assert version.startswith("snapshot-")
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    materialize(defs, instance, requested(result))
    for _ in range(2):
        result = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=result.cursor
        )
        materialize(defs, instance, requested(result)) if requested(result) else None
    assert observe(defs, instance) == version
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert requested(result) == set()


def test_automation_sensor_is_on_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    sensor = automation_sensor()
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    monkeypatch.setenv("FORMULA_ASSETS_AUTOMATION", "off")
    assert automation_sensor().default_status == dg.DefaultSensorStatus.STOPPED
