"""Semantic and OPT-text embedding assets through Dagster: cache, model setting, checks."""

from pathlib import Path

import dagster as dg
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from formula_assets.core.arrow import embedding_matrix, embedding_table, with_expected_dimension
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource
from formula_assets.defs.semantics.concept_annotations import concept_annotations
from formula_assets.defs.semantics.sentence_embeddings import (
    opt_text_embeddings,
    semantic_embeddings,
    semantic_embeddings_valid,
)
from formula_assets.ingest.records import Concept, FormulaRecord, records_to_table
from formula_assets.syntax.opt import build_opt_graphs

RECORDS = [
    FormulaRecord(
        qid="Q1",
        label="kinetic energy",
        description="energy of a moving body",
        mathml="<math><mi>E</mi></math>",
        concepts=[Concept("Q11423", "mass", "property of matter"), Concept("Q2", "speed", None)],
    ),
    FormulaRecord(qid="Q2", label="speed", description=None, mathml="<math><mi>v</mi></math>"),
]


@dg.asset(name="wikidata_formulae")
def fixture_formulae() -> pa.Table:
    return records_to_table(RECORDS)


@dg.asset(name="opt_graphs")
def fixture_graphs() -> pa.Table:
    return build_opt_graphs([(r.qid, r.mathml) for r in RECORDS]).graphs


def run(lake: Path, cache: Path, assets, config: dict | None = None, **kwargs):
    return dg.materialize(
        assets,
        resources={
            "io_manager": DataLakeIOManager(base_path=str(lake)),
            "sentence_embedder": SentenceEmbedderResource(cache_path=str(cache), batch_size=8),
        },
        run_config=dg.RunConfig(config or {}),
        **kwargs,
    )


def metadata(result, node: str) -> dict:
    return result.asset_materializations_for_node(node)[0].metadata


def test_semantic_embeddings_sum_and_cache(tmp_path: Path) -> None:
    lake, cache = tmp_path / "lake", tmp_path / "cache"
    assets = [fixture_formulae, concept_annotations, semantic_embeddings]
    first = run(lake, cache, assets)
    assert first.success
    meta = metadata(first, "semantic_embeddings")
    assert meta["newly_embedded"].value == 5 and meta["dimension"].value == 384
    table = pq.read_table(lake / "semantic_embeddings.parquet")
    qids, matrix = embedding_matrix(table)
    assert qids == ["Q1", "Q2"] and matrix.shape == (2, 384)
    assert table.column("num_texts").to_pylist() == [5, 1]
    # Each text vector is unit length, so the sum of five has a norm well above one.
    assert np.linalg.norm(matrix[0]) > 1.5
    assert np.linalg.norm(matrix[1]) == pytest.approx(1.0, abs=1e-5)

    second = run(lake, cache, assets)
    assert metadata(second, "semantic_embeddings")["newly_embedded"].value == 0
    assert metadata(second, "semantic_embeddings")["from_cache"].value == 5

    mean = run(lake, cache, assets, {"semantic_embeddings": {"config": {"aggregation": "mean"}}})
    _, averaged = embedding_matrix(pq.read_table(lake / "semantic_embeddings.parquet"))
    assert np.allclose(averaged[0] * 5, matrix[0], atol=1e-4)
    assert metadata(mean, "semantic_embeddings")["newly_embedded"].value == 0


def test_opt_text_embeddings(tmp_path: Path) -> None:
    result = run(tmp_path / "lake", tmp_path / "cache", [fixture_graphs, opt_text_embeddings])
    assert result.success
    qids, matrix = embedding_matrix(
        pq.read_table(tmp_path / "lake" / "opt_text_embeddings.parquet")
    )
    assert qids == ["Q1", "Q2"] and matrix.shape == (2, 384)


def test_missing_model_fails_with_the_setting_named(tmp_path: Path) -> None:
    result = run(
        tmp_path / "lake",
        tmp_path / "cache",
        [fixture_formulae, concept_annotations, semantic_embeddings],
        {"semantic_embeddings": {"config": {"model": str(tmp_path / "nowhere")}}},
        raise_on_error=False,
    )
    assert not result.success
    error = result.get_step_failure_events()[0].step_failure_data.error.cause
    assert error.cls_name == "EmbeddingModelError"
    assert "`model` config" in error.message and "does not exist" in error.message
    assert not (tmp_path / "lake" / "semantic_embeddings.parquet").exists()


def vectors(matrix: np.ndarray, declared: int | None = None) -> pa.Table:
    table = embedding_table([f"Q{i}" for i in range(len(matrix))], matrix.astype(np.float32))
    return with_expected_dimension(table, declared or matrix.shape[1])


def test_vector_check_passes_and_fails() -> None:
    good = np.ones((3, 4))
    assert semantic_embeddings_valid(vectors(good)).passed
    nan = good.copy()
    nan[1, 2] = np.nan
    assert not semantic_embeddings_valid(vectors(nan)).passed
    zero = good.copy()
    zero[0] = 0
    assert "all-zero" in semantic_embeddings_valid(vectors(zero)).description
    assert "expected 8" in semantic_embeddings_valid(vectors(good, declared=8)).description
    loose = pa.table({"qid": ["Q1"], "embedding": [[1.0, 2.0]]})
    assert "not a fixed-size float32 list" in semantic_embeddings_valid(loose).description


def test_the_frozen_layers_store_sits_beside_a_local_embedding_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    assert SentenceEmbedderResource(cache_path=str(cache)).frozen_layers_store() == (
        cache / "frozen_layers"
    )
    assert SentenceEmbedderResource(cache_path="").frozen_layers_store() is None  # no cache
    assert SentenceEmbedderResource(cache_path="s3://bucket/cache").frozen_layers_store() is None
    monkeypatch.setenv("FORMULA_ASSETS_DATA_LAKE", str(tmp_path / "lake"))
    monkeypatch.delenv("FORMULA_ASSETS_EMBEDDING_CACHE", raising=False)
    assert SentenceEmbedderResource().frozen_layers_store() == (
        tmp_path / "lake" / "_cache" / "embeddings" / "frozen_layers"
    )
