"""The data lake on an S3-compatible object store: a local moto server spoken to over HTTP
through s3fs — ingest, syntax and semantics assets and a trained fold model round-trip there
(tables gated by blocking checks are staged, then published by one copy), no temporary object
is ever created, and no reader sees half an object."""

import json
import threading
import uuid

import dagster as dg
import fsspec
import numpy as np
import pyarrow as pa
import pytest
from upath import UPath

from formula_assets.core import lake
from formula_assets.defs.ingest.wikidata_formulae import wikidata_formulae
from formula_assets.defs.io_managers import DataLakeIOManager, ModelIOManager
from formula_assets.defs.resources.data_lake import DataLakeResource
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets.defs.semantics.concept_annotations import concept_annotations
from formula_assets.defs.semantics.sentence_embeddings import (
    opt_text_embeddings,
    opt_token_embeddings,
    semantic_embeddings,
)
from formula_assets.defs.syntax.concept_symbols import concept_symbols
from formula_assets.defs.syntax.opt_graphs import parse_formulae
from formula_assets.defs.syntax.structural_embeddings import structural_embeddings
from formula_assets.defs.training.cv_folds import cv_folds
from formula_assets.defs.training.fold_models import fold_models
from formula_assets.training.artifacts import load_model


def keys_under(url: str) -> list[str]:
    filesystem = fsspec.filesystem("s3", skip_instance_cache=True)
    return sorted(filesystem.find(url.removeprefix("s3://")))


def test_assets_and_a_fold_model_round_trip_through_object_storage(
    s3: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = f"{s3}/lake-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("FORMULA_ASSETS_DATA_LAKE", root)  # the embedding cache lives there too
    monkeypatch.delenv("FORMULA_ASSETS_EMBEDDING_CACHE", raising=False)
    monkeypatch.setenv("FORMULA_ASSETS_MIN_FORMULAE", "10")
    monkeypatch.setenv("FORMULA_ASSETS_PROFILE", "smoke")
    resources = {
        "io_manager": DataLakeIOManager(base_path=root),
        "model_io_manager": ModelIOManager(base_path=root),
        "data_lake": DataLakeResource(base_path=root),
        "wikidata": WikidataResource(source="snapshot"),
        "sentence_embedder": SentenceEmbedderResource(),
    }
    assets = [
        wikidata_formulae,
        parse_formulae,
        concept_symbols,
        structural_embeddings,
        concept_annotations,
        semantic_embeddings,
        opt_text_embeddings,
        opt_token_embeddings,
        cv_folds,
        fold_models,
    ]
    unpartitioned = [a for a in assets if a is not fold_models]
    result = dg.materialize(
        unpartitioned,
        resources=resources,
        run_config={"ops": {"wikidata_formulae": {"config": {"sample": 60}}}},
    )
    assert result.success
    trained = dg.materialize(
        assets, resources=resources, selection=["fold_models"], partition_key="1|sbert_dual_cl"
    )
    assert trained.success
    stored = keys_under(root)
    for name in ("wikidata_formulae", "opt_graphs", "rejected_formulae", "semantic_embeddings"):
        assert f"{root.removeprefix('s3://')}/{name}.parquet" in stored
        table = lake.read_parquet(UPath(root) / f"{name}.parquet")
        assert table.num_rows > 0 or name == "rejected_formulae"
    assert any("/_cache/embeddings/" in key for key in stored)  # the cache travelled along
    assert not [key for key in stored if lake.TMP_MARKER in key]  # no temporary objects
    assert not [key for key in stored if "/_staged/" in key]  # every checked table published
    model = load_model(UPath(root) / "fold_models" / "1" / "sbert_dual_cl")
    assert model.method == "sbert_dual_cl" and model.fold == 1
    assert model.embeddings is not None and model.embeddings.num_rows == 60
    directory = UPath(root) / "fold_models" / "1" / "sbert_dual_cl"
    version = (directory / "CURRENT").read_text().strip()
    config = json.loads((directory / version / "config.json").read_text())
    assert config["method"] == "sbert_dual_cl" and config["profile"] == "smoke"


def test_no_reader_sees_half_an_object(s3: str) -> None:
    """A reader polling an object that a writer keeps replacing only ever reads a complete
    table (one version's values throughout), and a write that fails midway changes nothing."""
    target = UPath(s3) / f"race-{uuid.uuid4().hex[:8]}.parquet"
    rows = 300_000  # ≈ 2.4 MB: more than one multipart chunk would hold
    lake.write_parquet_atomic(pa.table({"v": np.zeros(rows)}), target)
    stop = threading.Event()
    seen: list[float] = []
    errors: list[BaseException] = []

    def read() -> None:
        while not stop.is_set():
            try:
                values = lake.read_parquet(target)["v"].to_numpy()
            except BaseException as exc:  # a half object would fail to parse: record it
                errors.append(exc)
                return
            assert len(values) == rows and values.min() == values.max()
            seen.append(float(values[0]))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for version in range(1, 7):
            lake.write_parquet_atomic(pa.table({"v": np.full(rows, float(version))}), target)
    finally:
        stop.set()
        reader.join(timeout=60)
    assert errors == []
    assert len(seen) > 0 and set(seen) <= {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0}
    with pytest.raises(RuntimeError), lake.atomic_file(target) as fh:
        fh.write(b"PAR1 half a parquet file")
        raise RuntimeError("the writer fails midway")
    assert set(lake.read_parquet(target)["v"].to_numpy().tolist()) == {6.0}
