"""`cv_folds`, `fold_models` and `retrieval_scores` in Dagster, and the checks guarding them."""

import dataclasses
import logging
import uuid

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
from upath import UPath

from formula_assets.core.arrow import with_model
from formula_assets.core.protocol import DIRECTIONS
from formula_assets.defs.evaluation.retrieval_scores import (
    retrieval_scores_beat_chance,
    retrieval_scores_complete,
    retrieval_scores_consistent,
)
from formula_assets.defs.io_managers import DataLakeIOManager, ModelIOManager
from formula_assets.defs.training.cv_folds import cv_folds, cv_folds_cover_every_formula
from formula_assets.defs.training.fold_models import fold_models
from formula_assets.methods import registry
from formula_assets.training.artifacts import TrainedModel, load_model, model_directory


def constant_asset(name: str, table: pa.Table) -> dg.AssetsDefinition:
    @dg.asset(name=name)
    def _constant() -> pa.Table:
        return table

    return _constant


def corpus_assets(c, **tables: pa.Table) -> list[dg.AssetsDefinition]:
    """`fold_models`' inputs drawn from the small corpus as constant assets, `tables` replacing
    or adding to them."""
    drawn = {
        "opt_graphs": c.graphs,
        "semantic_embeddings": c.semantic,
        "opt_text_embeddings": c.opt_text,
        "opt_token_embeddings": c.tokens,
        "concept_annotations": c.annotations,
        "concept_symbols": c.symbols,
    }
    return [constant_asset(name, table) for name, table in {**drawn, **tables}.items()]


def test_fold_model_partition_in_dagster(small_corpus) -> None:
    c = small_corpus
    fixtures = corpus_assets(c, wikidata_formulae=c.formulae)
    base = f"memory://lake-{uuid.uuid4().hex}"
    result = dg.materialize(
        [*fixtures, cv_folds, fold_models],
        selection=[
            "wikidata_formulae",
            "opt_graphs",
            "semantic_embeddings",
            "opt_text_embeddings",
            "opt_token_embeddings",
            "concept_annotations",
            "concept_symbols",
            "cv_folds",
            "fold_models",
        ],
        resources={
            "io_manager": DataLakeIOManager(base_path=base),
            "model_io_manager": ModelIOManager(base_path=base),
        },
        partition_key="2|sbert_dual_cl",
        run_config=dg.RunConfig({"fold_models": {"config": {"profile": "smoke"}}}),
    )
    assert result.success
    # the search finds the model where the IO manager put it
    stored = load_model(model_directory(UPath(base), 2, "sbert_dual_cl"))
    assert isinstance(stored, TrainedModel)
    described = stored.description
    assert (stored.fold, stored.method, described.profile) == (2, "sbert_dual_cl", "smoke")
    meta = result.asset_materializations_for_node("fold_models")[0].metadata
    assert meta["best_epoch"].value == described.best_epoch
    assert meta["split_sizes"].value == dataclasses.asdict(described.split_sizes)
    assert meta["runs"].value == [dataclasses.asdict(r) for r in described.runs]
    assert meta["training_curve"].value.startswith("![training curve](data:image/png;base64,")


def test_a_partition_whose_recipe_is_unchanged_reuses_its_model(small_corpus, monkeypatch) -> None:
    """Run again on the same inputs, code and settings, a partition returns its stored model
    without training, with the same data version; `retrain` trains it anyway."""
    from formula_assets.training import fold

    trainings: list[str] = []
    train_fold = fold.train_fold
    monkeypatch.setattr(
        fold,
        "train_fold",
        lambda method, *a, **k: trainings.append(method.name) or train_fold(method, *a, **k),
    )
    c = small_corpus
    fixtures = corpus_assets(c, wikidata_formulae=c.formulae)
    base = f"memory://lake-{uuid.uuid4().hex}"
    resources = {
        "io_manager": DataLakeIOManager(base_path=base),
        "model_io_manager": ModelIOManager(base_path=base),
    }
    directory = model_directory(UPath(base), 3, "bag_dual_cl")

    def materialize(selection: list[str], retrain: bool = False) -> dg.MaterializeResult:
        config = {"profile": "smoke", "retrain": retrain}
        result = dg.materialize(
            [*fixtures, cv_folds, fold_models],
            selection=selection,
            resources=resources,
            partition_key="3|bag_dual_cl",
            run_config=dg.RunConfig({"fold_models": {"config": config}}),
        )
        assert result.success
        (event,) = [
            e
            for e in result.all_events
            if e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key.path == ["fold_models"]
        ]
        return event.step_materialization_data.materialization

    first = materialize([f.key.to_user_string() for f in fixtures] + ["cv_folds", "fold_models"])
    trained = load_model(directory).description
    assert trainings == ["bag_dual_cl"] and trained.recipe
    assert not first.metadata["reused"].value
    again = materialize(["fold_models"])
    assert trainings == ["bag_dual_cl"] and again.metadata["reused"].value
    assert load_model(directory).description == trained
    assert again.tags["dagster/data_version"] == first.tags["dagster/data_version"]
    forced = materialize(["fold_models"], retrain=True)
    assert trainings == ["bag_dual_cl"] * 2 and not forced.metadata["reused"].value
    assert load_model(directory).description.recipe == trained.recipe


def refused_training(fixtures: list, partition_key: str, profile: str) -> str:
    """Materialize one `fold_models` partition with a run-config profile that must be refused:
    the step's failure message, after checking that no model was stored."""
    base = f"memory://lake-{uuid.uuid4().hex}"
    result = dg.materialize(
        [*fixtures, cv_folds, fold_models],
        resources={
            "io_manager": DataLakeIOManager(base_path=base),
            "model_io_manager": ModelIOManager(base_path=base),
        },
        partition_key=partition_key,
        run_config=dg.RunConfig({"fold_models": {"config": {"profile": profile}}}),
        raise_on_error=False,
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    fold, method = partition_key.split("|")
    assert not model_directory(UPath(base), int(fold), method).exists()
    return failure.step_failure_data.error.message


def test_a_profile_that_disagrees_with_the_embeddings_is_refused(small_corpus, monkeypatch) -> None:
    """`profile: paper` as run config on all-MiniLM vectors would train the paper's sizes and
    record "paper": refused before any training, naming the setting to change."""
    monkeypatch.delenv("FORMULA_ASSETS_EMBEDDING_MODEL", raising=False)
    c = small_corpus
    minilm = with_model(c.semantic, "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-test")
    fixtures = corpus_assets(
        c,
        wikidata_formulae=c.formulae,
        semantic_embeddings=minilm,
        opt_text_embeddings=with_model(c.opt_text, "all-MiniLM-L6-v2", "x"),
    )
    message = refused_training(fixtures, "2|sbert_dual_cl", "paper")
    assert "'paper' profile trains on sentence-transformers/all-mpnet-base-v2 vectors" in message
    assert "FORMULA_ASSETS_PROFILE=paper" in message


def test_cv_folds_check(small_corpus) -> None:
    formulae, folds = small_corpus.formulae, small_corpus.folds
    assert cv_folds_cover_every_formula(folds, formulae).passed
    doubled = pa.concat_tables([folds, folds.slice(0, 1)])
    assert "more than one fold" in cv_folds_cover_every_formula(doubled, formulae).description
    missing = folds.slice(1)
    assert "without a fold" in cv_folds_cover_every_formula(missing, formulae).description
    bad = folds.set_column(1, "fold", pa.array([9] * folds.num_rows, pa.int8()))
    assert not cv_folds_cover_every_formula(bad, formulae).passed


def scores(**override) -> pa.Table:
    rows = [
        {
            "fold": f,
            "method": m,
            "direction": d,
            "recall_at_1": 0.2,
            "recall_at_5": 0.5,
            "recall_at_10": 0.7,
            "mrr": 0.35,
            "candidates": 350,
        }
        for f in range(1, 6)
        for m in registry.lineup().names
        for d in DIRECTIONS
    ]
    rows[0].update(override)
    return pa.Table.from_pylist(rows)


def test_scores_complete_check() -> None:
    good = scores()
    assert retrieval_scores_complete(good).passed
    short = good.filter(pc.invert(pc.equal(good["method"], "bm25")))
    assert not retrieval_scores_complete(short).passed
    assert not retrieval_scores_complete(pa.concat_tables([good, good.slice(0, 1)])).passed


def test_scores_consistent_check() -> None:
    assert retrieval_scores_consistent(scores()).passed
    assert not retrieval_scores_consistent(scores(recall_at_5=0.9)).passed
    assert not retrieval_scores_consistent(scores(mrr=1.5)).passed


def test_scores_beat_chance_check() -> None:
    assert retrieval_scores_beat_chance(scores()).passed
    weak = scores(method="graph_text_cl", recall_at_1=0.01, recall_at_5=0.02, recall_at_10=0.03)
    assert not retrieval_scores_beat_chance(weak).passed
    baseline_weak = scores(recall_at_1=0.01, recall_at_5=0.02, recall_at_10=0.03)  # bm25 row
    assert retrieval_scores_beat_chance(baseline_weak).passed


def test_a_frozen_layer_store_that_refuses_writes_is_told_in_the_run_log(
    small_corpus, monkeypatch, tmp_path
) -> None:
    """The fine-tuned encoder's fold trains without its store (an embedding cache with a file
    where `frozen_layers/` should be), and the run's log says the pass was not shared."""
    from collections import OrderedDict

    from formula_assets.training import sentence_encoder

    # no pass kept in this process by an earlier test: the store is asked
    monkeypatch.setattr(sentence_encoder, "_FROZEN", OrderedDict())
    c = small_corpus
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "frozen_layers").write_text("not a folder")
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_CACHE", str(tmp_path / "cache"))
    fixtures = corpus_assets(c, cv_folds=c.folds)
    instance = dg.DagsterInstance.ephemeral()
    base = f"memory://lake-{uuid.uuid4().hex}"
    result = dg.materialize(
        [*fixtures, fold_models],
        resources={
            "io_manager": DataLakeIOManager(base_path=base),
            "model_io_manager": ModelIOManager(base_path=base),
        },
        partition_key="1|sbert_finetuned_cl",
        run_config=dg.RunConfig({"fold_models": {"config": {"profile": "smoke"}}}),
        instance=instance,
    )
    assert result.success
    warned = [
        e.user_message
        for e in instance.all_logs(result.run_id)
        if e.level == logging.WARNING and "not shared" in e.user_message
    ]
    assert warned and str(tmp_path / "cache" / "frozen_layers") in warned[0]


def test_a_run_config_profile_that_leaves_the_method_out_is_refused(small_corpus) -> None:
    """The partitions are the methods of the profile the definitions were loaded with (smoke,
    here): a run-config profile that leaves the partition's method out trains nothing."""
    c = small_corpus
    fixtures = corpus_assets(c, wikidata_formulae=c.formulae)
    message = refused_training(fixtures, "2|sbert_finetuned_cl", "default")
    assert "the 'default' profile leaves out sbert_finetuned_cl" in message
    assert "FORMULA_ASSETS_PROFILE=default" in message
