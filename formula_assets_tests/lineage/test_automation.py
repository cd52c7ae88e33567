"""Refresh as Wikidata changes: the probe, declarative automation, the weekly schedule.

Runs the project's real assets, automation conditions, schedule and sensor against a local
SPARQL endpoint whose data the test changes, evaluated with Dagster's own test entry points.
"""

import dataclasses
from pathlib import Path

import dagster as dg
import pytest

from formula_assets.defs.automation import automation_sensor
from formula_assets.defs.ingest.freshness import CURRENT_CHECK, wikidata_formulae_current
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets_tests.support.automation import (
    KEYS,
    definitions,
    materialize,
    observe,
    requested,
)
from formula_assets_tests.support.sparql_server import (
    FakeWdqs,
    is_probe_query,
    math,
    snapshot_world,
)


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

    # First evaluation: what is missing with every ancestor present (`eager` alone would
    # request nothing); each evaluation then requests the next level, as `refresh` builds
    # them, until everything was built once.
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert requested(result) == {"wikidata_formulae"}
    built: list[str] = []
    while requested(result):
        built += requested(result)
        materialize(defs, instance, requested(result))
        result = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=result.cursor
        )
    assert sorted(built) == sorted(KEYS)

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
    probes = sparql_server.probe_requests()
    assert len(probes) == 1 and probes[0].user_agent
    assert all(is_probe_query(r.query) for r in sparql_server.requests)


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


# --- a concept edited on Wikidata reaches the semantic vectors ------------------------------------

SEMANTIC = dg.AssetKey("semantic_embeddings")


def keys_of(asset: object) -> set[dg.AssetKey]:
    return set(asset.keys) if isinstance(asset, dg.AssetsDefinition) else {asset.key}


def semantic_chain(lake: Path, endpoint: str, cache: Path) -> dg.Definitions:
    """The project's own assets from the probe down to `semantic_embeddings` (whatever that
    chain holds), with the project's automation, against a local endpoint and lake."""
    from formula_assets.definitions import defs as project

    graph = project.resolve_asset_graph()
    chain, todo = set(), [SEMANTIC]
    while todo:  # every ancestor, source assets included
        key = todo.pop()
        chain.add(key)
        todo.extend(graph.get(key).parent_keys - chain)
    assets = [a for a in project.assets or [] if keys_of(a) <= chain]
    assert set().union(*map(keys_of, assets)) == chain
    return dg.Definitions(
        assets=assets,
        asset_checks=[wikidata_formulae_current],
        sensors=[automation_sensor()],
        resources={
            **project.resources,
            "io_manager": DataLakeIOManager(base_path=str(lake)),
            "wikidata": WikidataResource(source="sparql", sparql_endpoint=endpoint, max_retries=0),
            "sentence_embedder": SentenceEmbedderResource(cache_path=str(cache)),
        },
    )


def observe_sources(defs: dg.Definitions, instance: dg.DagsterInstance) -> tuple[str, bool]:
    """Observe every observable source of the chain (the probe among them), then run the
    `wikidata_formulae_current` check, as the weekly job does: the probe's version, and
    whether the check passed."""
    graph = defs.resolve_asset_graph()
    sources = [k for k in graph.get_all_asset_keys() if graph.get(k).is_observable]
    selection = dg.AssetSelection.assets(*sources) | dg.AssetSelection.checks(CURRENT_CHECK)
    job = dg.define_asset_job("observe_sources", selection=selection)
    resolved = dg.Definitions.merge(defs, dg.Definitions(jobs=[job]))
    result = resolved.resolve_job_def("observe_sources").execute_in_process(instance=instance)
    assert result.success
    (check,) = result.get_asset_check_evaluations()
    record = instance.fetch_observations(dg.AssetKey("wikidata_probe"), limit=1).records[0]
    return record.asset_observation.data_version, check.passed


def settle(
    defs: dg.Definitions, instance: dg.DagsterInstance, cursor
) -> tuple[list[set[str]], object]:
    """Let the automation run to rest, as the sensor does: what it requested, level by level."""
    graph = defs.resolve_asset_graph()
    assets = [a for a in defs.assets or [] if not isinstance(a, dg.SourceAsset)]
    levels: list[set[str]] = []
    while True:
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        cursor = result.cursor
        keys = {k for k in graph.materializable_asset_keys if result.get_num_requested(k)}
        if not keys:
            return levels, cursor
        assert len(levels) < 10, levels
        levels.append({k.to_user_string() for k in keys})
        done = dg.materialize(
            assets, selection=sorted(keys), instance=instance, resources=defs.resources
        )
        assert done.success


def table(lake: Path, name: str) -> dict[str, dict]:
    import pyarrow.parquet as pq

    return {row["qid"]: row for row in pq.read_table(lake / f"{name}.parquet").to_pylist()}


def test_a_concept_edit_reaches_the_semantic_embeddings(
    tmp_path: Path, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wikidata edits only a concept's label: the label lives on the concept's own item, so
    the probe must see it, and the new text must reach the vectors; unchanged, nothing runs."""
    from formula_assets.ingest.snapshot import snapshot_records
    from formula_assets.ingest.sources import sample_records

    for name in ("FORMULA_ASSETS_SAMPLE", "FORMULA_ASSETS_MIN_FRACTION"):
        monkeypatch.delenv(name, raising=False)
    records = sample_records(list(snapshot_records()), 24)
    lake = tmp_path / "lake"
    with FakeWdqs(snapshot_world(records)) as server:
        defs = semantic_chain(lake, server.endpoint, tmp_path / "embedding_cache")
        first, _ = observe_sources(defs, instance)
        levels, cursor = settle(defs, instance, None)
        assert {"wikidata_formulae", "concept_annotations", "semantic_embeddings"} <= set().union(
            *levels
        )
        annotations, vectors = (
            table(lake, "concept_annotations"),
            table(lake, "semantic_embeddings"),
        )

        # The source is unchanged: the same fingerprint, and nothing is pulled or rebuilt.
        pulls = len(server.detail_requests())
        assert observe_sources(defs, instance) == (first, True)
        assert settle(defs, instance, cursor)[0] == []
        assert len(server.detail_requests()) == pulls

        # One concept's English label is edited on Wikidata; no formula item changes.
        record = next(r for r in records if r.concepts and r.concepts[0].label)
        concept = record.concepts[0]
        linking = {r.qid for r in records if any(c.qid == concept.qid for c in r.concepts)}
        new_label = f"{concept.label}, relabelled on Wikidata"
        server.edit(concept.qid, label=new_label)
        second, current = observe_sources(defs, instance)
        assert second != first and not current  # the data is not built on what Wikidata holds
        levels, cursor = settle(defs, instance, cursor)
        assert levels == [{"wikidata_formulae"}, {"concept_annotations"}, {"semantic_embeddings"}]
        assert observe_sources(defs, instance) == (second, True)
        assert settle(defs, instance, cursor)[0] == []

    new_annotations, new_vectors = (
        table(lake, "concept_annotations"),
        table(lake, "semantic_embeddings"),
    )
    for qid in linking:
        assert new_label in new_annotations[qid]["texts"]
        assert new_label not in annotations[qid]["texts"]
        assert new_vectors[qid]["embedding"] != vectors[qid]["embedding"]
    unaffected = set(vectors) - linking
    assert unaffected and all(new_vectors[q] == vectors[q] for q in unaffected)
