"""`structural_embeddings` and `correspondence_metrics` through Dagster, and their checks."""

import json
from pathlib import Path

import dagster as dg
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from formula_assets.core.arrow import embedding_table, with_expected_dimension
from formula_assets.defs.analysis.correspondence_metrics import (
    correspondence_inputs_complete,
    correspondence_metrics,
    correspondence_metrics_in_range,
)
from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.resources.data_lake import DataLakeResource
from formula_assets.defs.syntax.structural_embeddings import (
    structural_embeddings,
    structural_embeddings_valid,
)
from formula_assets.ingest.snapshot import read_snapshot_items
from formula_assets.syntax.opt import build_opt_graphs

ITEMS = read_snapshot_items()[:120]


@dg.asset(name="opt_graphs")
def fixture_graphs() -> pa.Table:
    return build_opt_graphs((i["item"].rsplit("/", 1)[1], i["formula"]) for i in ITEMS).graphs


@dg.asset(name="semantic_embeddings")
def fixture_semantic() -> pa.Table:
    rng = np.random.default_rng(0)
    qids = [i["item"].rsplit("/", 1)[1] for i in ITEMS]
    return with_expected_dimension(embedding_table(qids, rng.normal(size=(len(qids), 32))), 32)


def test_structural_then_table_1(tmp_path: Path) -> None:
    result = dg.materialize(
        [fixture_graphs, fixture_semantic, structural_embeddings, correspondence_metrics],
        resources={
            "io_manager": DataLakeIOManager(base_path=str(tmp_path)),
            "data_lake": DataLakeResource(base_path=str(tmp_path)),
        },
        run_config=dg.RunConfig(
            {
                "structural_embeddings": {"config": {"dimensions": 16}},
                "correspondence_metrics": {"config": {"permutations": 50, "rsa_permutations": 9}},
            }
        ),
    )
    assert result.success
    structural = pq.read_table(tmp_path / "structural_embeddings.parquet")
    assert structural.schema.field("embedding").type.list_size == 16
    assert structural_embeddings_valid(structural).passed
    metrics = pq.read_table(tmp_path / "correspondence_metrics.parquet")
    names = metrics.column("metric").to_pylist()
    for name in (
        "mean_cosine",
        "median_cosine",
        "std_cosine",
        "rsa_spearman",
        "rsa_p_value",
        "procrustes_error",
        "linear_cka",
        "cca_mean",
        "cca_top10",
        "recall_at_1",
        "recall_at_5",
        "recall_at_10",
        "permutation_p_value",
        "cca_mean_heldout",
    ):
        assert name in names
    assert correspondence_metrics_in_range(metrics).passed
    detail = json.loads(
        metrics.filter(pa.compute.equal(metrics["metric"], "permutation_p_value"))
        .column("detail")[0]
        .as_py()
    )
    assert detail["permutations"] == 50
    meta = result.asset_materializations_for_node("correspondence_metrics")[0].metadata
    assert "| mean_cosine |" in meta["table_1"].value and "0.0847" in meta["table_1"].value
    assert meta["cca_per_component"].value.startswith("![CCA per component](data:image/png;base64,")
    figures = tmp_path / "figures" / "correspondence_metrics"
    assert (figures / "cca_components.png").read_bytes()[:4] == b"\x89PNG"
    graphs = pq.read_table(tmp_path / "opt_graphs.parquet")
    semantic = pq.read_table(tmp_path / "semantic_embeddings.parquet")
    assert correspondence_inputs_complete(metrics, graphs, structural, semantic).passed
    missing = correspondence_inputs_complete(metrics, graphs, structural, semantic.slice(0, 100))
    assert not missing.passed and missing.metadata["without_semantic"].value == 20


def metrics_table(values: dict[str, float]) -> pa.Table:
    return pa.table(
        {"metric": list(values), "value": list(values.values()), "detail": [None] * len(values)}
    )


def test_metric_range_check_fails_on_bad_values() -> None:
    good = {
        "mean_cosine": 0.1,
        "median_cosine": 0.1,
        "std_cosine": 0.2,
        "rsa_spearman": 0.1,
        "rsa_p_value": 0.01,
        "procrustes_error": 0.8,
        "linear_cka": 0.2,
        "cca_mean": 0.7,
        "cca_top10": 0.8,
        "cca_mean_shuffled": 0.5,
        "cca_mean_heldout": 0.3,
        "recall_at_1": 0.001,
        "recall_at_5": 0.005,
        "recall_at_10": 0.01,
        "permutation_p_value": 0.001,
        "permutation_null_mean": 0.0,
        "permutation_null_std": 0.004,
    }
    assert correspondence_metrics_in_range(metrics_table(good)).passed
    for bad in (
        {"linear_cka": 1.2},
        {"rsa_spearman": -1.5},
        {"recall_at_5": 0.02},  # above R@10
        {"cca_mean": float("nan")},
    ):
        result = correspondence_metrics_in_range(metrics_table({**good, **bad}))
        assert not result.passed, bad
    incomplete = dict(good)
    del incomplete["linear_cka"]
    assert (
        "missing linear_cka"
        in correspondence_metrics_in_range(metrics_table(incomplete)).description
    )
