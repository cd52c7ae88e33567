"""The sentence model is an input that lineage sees: `sentence_model` (an observable source)
holds a hash of the model's files, so a model saved over the same files makes exactly the
embedding assets stale, `refresh` rebuilds them with new vectors, and the automation requests
them. Real assets, a real copy of all-MiniLM-L6-v2 edited in place, the CLI's own staleness
resolver and refresh loop, in process."""

from dataclasses import replace
from pathlib import Path

import dagster as dg
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from formula_assets.cli.observe import observe_sentence_model, observed_stale_entries
from formula_assets.cli.refresh import RefreshError, refresh
from formula_assets.core.arrow import vectors as matrix
from formula_assets.core.profiles import PROFILES
from formula_assets.defs.automation import automation_sensor
from formula_assets.defs.conventions import with_conventions
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.plan import stale_entries
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource
from formula_assets.defs.semantics.concept_annotations import concept_annotations
from formula_assets.defs.semantics.sentence_embeddings import (
    opt_text_embeddings,
    opt_text_embeddings_valid,
    opt_token_embeddings,
    opt_token_embeddings_valid,
    semantic_embeddings,
    semantic_embeddings_valid,
)
from formula_assets.defs.semantics.sentence_model import (
    observe_sentence_model as observe_job,
)
from formula_assets.defs.semantics.sentence_model import sentence_model
from formula_assets.ingest.records import Concept, FormulaRecord, records_to_table
from formula_assets.methods import registry, sbert_finetuned_cl
from formula_assets.semantics.identity import folder_hash, joined_identity
from formula_assets.semantics.models import packaged_default_path
from formula_assets.syntax.opt import build_opt_graphs
from formula_assets_tests.support.models import copy_model, fine_tune_in_place

EMBEDDINGS = {"semantic_embeddings", "opt_text_embeddings", "opt_token_embeddings"}
RECORDS = [
    FormulaRecord(
        qid="Q1",
        label="kinetic energy",
        description="energy of a moving body",
        mathml="<math><mi>E</mi><mo>=</mo><mi>m</mi></math>",
        concepts=[Concept("Q11423", "mass", "property of matter")],
    ),
    FormulaRecord(qid="Q2", label="speed", description=None, mathml="<math><mi>v</mi></math>"),
]


@dg.asset(name="wikidata_formulae", code_version="1")
def fixture_formulae() -> pa.Table:
    return records_to_table(RECORDS)


@dg.asset(name="opt_graphs", code_version="1")
def fixture_graphs() -> pa.Table:
    return build_opt_graphs([(r.qid, r.mathml) for r in RECORDS]).graphs


def definitions(tmp_path: Path) -> dg.Definitions:
    defs = dg.Definitions(
        assets=[
            sentence_model,
            fixture_formulae,
            fixture_graphs,
            concept_annotations,
            semantic_embeddings,
            opt_text_embeddings,
            opt_token_embeddings,
        ],
        asset_checks=[
            semantic_embeddings_valid,
            opt_text_embeddings_valid,
            opt_token_embeddings_valid,
        ],
        jobs=[observe_job],
        sensors=[automation_sensor()],
        resources={
            "io_manager": DataLakeIOManager(base_path=str(tmp_path / "lake")),
            "sentence_embedder": SentenceEmbedderResource(cache_path=str(tmp_path / "cache")),
        },
    )
    return with_conventions(defs)


def observed(instance: dg.DagsterInstance) -> str | None:
    records = instance.fetch_observations(dg.AssetKey("sentence_model"), limit=1).records
    return records[0].asset_observation.data_version if records else None


def stale(defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, str]:
    return {str(e.target): "; ".join(e.causes) for e in stale_entries(defs, instance)}


def vectors(tmp_path: Path) -> dict[str, np.ndarray]:
    out = {}
    for name in EMBEDDINGS:
        column = pq.read_table(tmp_path / "lake" / f"{name}.parquet").column("embedding")
        out[name] = matrix(column, column.type.list_size)
    return out


def identity_of(instance: dg.DagsterInstance, name: str) -> str:
    record = instance.fetch_materializations(dg.AssetKey(name), limit=1).records[0]
    return record.asset_materialization.metadata["model_identity"].value


@pytest.fixture
def instance():
    with dg.instance_for_test() as instance:
        yield instance


def test_a_model_changed_in_place_makes_exactly_its_dependents_stale(
    tmp_path: Path, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = copy_model(tmp_path / "model")
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_MODEL", str(model))
    defs = definitions(tmp_path)
    lines: list[str] = []
    first = refresh(defs, instance, lines.append, workers=1)
    assert set(first.ran) == {"wikidata_formulae", "opt_graphs", "concept_annotations"} | EMBEDDINGS
    version = observed(instance)
    assert version is not None
    assert {identity_of(instance, name) for name in EMBEDDINGS} == {version}
    assert stale(defs, instance) == {}
    before = vectors(tmp_path)

    # Unchanged files: the same version, nothing stale, nothing rebuilt (and no second
    # observation recorded: the refresh compares the hash first).
    again = refresh(defs, instance, lines.append, workers=1)
    assert observed(instance) == version and again.ran == []
    assert len(instance.fetch_observations(dg.AssetKey("sentence_model"), limit=5).records) == 1

    # A fine-tune saved over the same files, file and folder mtimes as they were: what
    # `formula-assets stale` lists (it observes first, as a refresh does) …
    fine_tune_in_place(model)
    assert stale(defs, instance) == {}  # Dagster's status alone does not see the files
    listed = {
        str(e.target): "; ".join(e.causes)
        for e in observed_stale_entries(defs, instance, lines.append)
    }
    assert observed(instance) not in (None, version)
    assert any(line.startswith("sentence_model changed") for line in lines)
    causes = stale(defs, instance)
    assert listed == causes  # … is what the refresh below finds and builds
    assert set(causes) == EMBEDDINGS
    assert all("sentence_model" in cause for cause in causes.values()), causes

    rebuilt = refresh(defs, instance, lines.append, workers=1)
    assert set(rebuilt.ran) == EMBEDDINGS
    assert stale(defs, instance) == {}
    after = vectors(tmp_path)
    for name in EMBEDDINGS:
        assert before[name].shape == after[name].shape
        assert not np.allclose(before[name], after[name], atol=1e-3), name
    (new_identity,) = {identity_of(instance, name) for name in EMBEDDINGS}
    assert new_identity == folder_hash(model).digest
    # the smoke profile fine-tunes the packaged model, no longer the embedding model: its
    # identity joins the observed version (fold_models reads both)
    packaged = folder_hash(packaged_default_path()).digest
    assert observed(instance) == joined_identity([new_identity, packaged])
    cache_keys = {p.name for p in (tmp_path / "cache").iterdir()}
    assert cache_keys == {f"{version}-torch", f"{new_identity}-torch"}  # the plain engine's


def test_the_automation_observes_the_model_and_requests_its_dependents(
    tmp_path: Path, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = copy_model(tmp_path / "model")
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_MODEL", str(model))
    defs = definitions(tmp_path)
    key = dg.AssetKey("sentence_model")

    # The sensor evaluates it (source assets are outside a selection unless asked for).
    sensor = defs.resolve_sensor_def("formula_assets_automation")
    assert key in sensor.asset_selection.resolve(defs.resolve_asset_graph())
    # Never observed: the sensor's first evaluation observes it; the embedding assets wait.
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert result.get_num_requested(key) == 1
    assert not any(result.get_num_requested(dg.AssetKey(n)) for n in EMBEDDINGS)
    refresh(defs, instance, lambda _line: None, workers=1)  # observes, then builds all
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    assert result.total_requested == 0
    # A sensor started afresh (a new cursor) does not observe a model already observed.
    assert dg.evaluate_automation_conditions(defs=defs, instance=instance).total_requested == 0

    fine_tune_in_place(model)
    assert defs.resolve_job_def("observe_sentence_model").execute_in_process(instance=instance)
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=result.cursor)
    requested = {
        k.to_user_string()
        for k in defs.resolve_asset_graph().get_all_asset_keys()
        if result.get_num_requested(k)
    }
    assert requested == EMBEDDINGS


def test_a_model_that_is_not_there_stops_the_refresh_at_once(
    tmp_path: Path, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_MODEL", str(tmp_path / "nowhere"))
    defs = definitions(tmp_path)
    with pytest.raises(RefreshError) as raised:
        refresh(defs, instance, lambda _line: None, workers=1)
    message = str(raised.value)
    assert "FORMULA_ASSETS_EMBEDDING_MODEL" in message and "does not exist" in message
    assert not (tmp_path / "lake").exists()  # nothing was built on a model that is not there


def fine_tuning_from(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile (smoke's) whose fine-tuned encoder starts from the local folder `base`."""
    monkeypatch.setitem(PROFILES, "custom", replace(PROFILES["smoke"], name="custom"))
    for method in registry.BUILT_IN:  # every method's smoke settings, the base model changed
        table = getattr(method, "profile_settings", {})
        if "smoke" in table:
            monkeypatch.setitem(table, "custom", table["smoke"])
    finetuned = replace(sbert_finetuned_cl.PROFILE_SETTINGS["smoke"], base_model=str(base))
    monkeypatch.setitem(sbert_finetuned_cl.PROFILE_SETTINGS, "custom", finetuned)
    monkeypatch.setenv("FORMULA_ASSETS_PROFILE", "custom")


def test_a_base_model_of_its_own_is_observed_beside_the_embedding_model(
    tmp_path: Path, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local base model of the fine-tuned encoder, changed in place, is a new version of
    `sentence_model` (which `fold_models` reads: test_definitions checks the edge); the
    embedding assets re-run from their cache with the same vectors."""
    base = copy_model(tmp_path / "base")
    fine_tuning_from(base, monkeypatch)
    defs = definitions(tmp_path)
    lines: list[str] = []
    refresh(defs, instance, lines.append, workers=1)
    version = observed(instance)
    # a copy of the packaged model is the embedding model by content: nothing joins
    assert version == identity_of(instance, "semantic_embeddings")
    before = vectors(tmp_path)

    fine_tune_in_place(base)
    observe_sentence_model(defs, instance, lines.append)
    joined = joined_identity([version, folder_hash(base).digest])
    assert observed(instance) == joined
    record = instance.fetch_observations(dg.AssetKey("sentence_model"), limit=1).records[0]
    listed = record.asset_observation.metadata["base_models"].value
    assert [entry["location"] for entry in listed] == [str(base.resolve())]
    assert set(stale(defs, instance)) == EMBEDDINGS

    rebuilt = refresh(defs, instance, lines.append, workers=1)
    assert set(rebuilt.ran) == EMBEDDINGS
    assert {identity_of(instance, name) for name in EMBEDDINGS} == {version}
    after = vectors(tmp_path)
    assert all(np.array_equal(before[name], after[name]) for name in EMBEDDINGS)
    # unchanged files: no second observation, nothing rebuilt
    assert refresh(defs, instance, lines.append, workers=1).ran == []
    assert len(instance.fetch_observations(dg.AssetKey("sentence_model"), limit=5).records) == 2

    fine_tune_in_place(base, scale=0.1)
    observe_sentence_model(defs, instance, lines.append)
    assert observed(instance) not in (version, joined)


def test_a_base_model_that_is_not_there_stops_the_refresh_at_once(
    tmp_path: Path, instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    fine_tuning_from(tmp_path / "nowhere", monkeypatch)
    defs = definitions(tmp_path)
    with pytest.raises(RefreshError) as raised:
        refresh(defs, instance, lambda _line: None, workers=1)
    message = str(raised.value)
    assert "'custom' profile's sbert_finetuned_cl base model" in message, message
    assert "does not exist" in message
    assert not (tmp_path / "lake").exists()
