"""The whole graph, materialized by the real CLI with the smoke profile on a stable sample."""

from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest

from formula_assets.evaluation import ALL_METHODS, DIRECTIONS
from formula_assets_tests.pipeline import SAMPLE, pipeline

EXPECTED_WARNINGS = {"wikidata_formulae_has_concepts"}  # some items link no concept


@pytest.mark.slow
def test_refresh_materializes_everything_then_nothing(tmp_path: Path, embedding_cache) -> None:
    run = pipeline(tmp_path, embedding_cache)
    first = run.run("refresh")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "materializing wikidata_formulae" in first.stdout
    assert "fold_models: 10 partition(s)" in first.stdout
    for asset in (
        "wikidata_formulae",
        "opt_graphs",
        "rejected_formulae",
        "structural_embeddings",
        "concept_annotations",
        "semantic_embeddings",
        "opt_text_embeddings",
        "correspondence_metrics",
        "cv_folds",
        "retrieval_scores",
    ):
        assert (run.lake / f"{asset}.parquet").exists(), asset
    assert pq.read_table(run.lake / "wikidata_formulae.parquet").num_rows == SAMPLE
    scores = pq.read_table(run.lake / "retrieval_scores.parquet")
    assert scores.num_rows == 5 * len(ALL_METHODS) * len(DIRECTIONS)
    for fold in range(1, 6):
        for method in ("graph_text_cl", "sbert_dual_cl"):
            assert (run.lake / "fold_models" / str(fold) / method / "CURRENT").exists()

    with dg.DagsterInstance.from_config(str(run.home)) as instance:
        from formula_assets.definitions import defs

        check_keys = list(defs.resolve_asset_graph().asset_check_keys)
        records = instance.event_log_storage.get_latest_asset_check_execution_by_key(check_keys)
        assert set(records) == set(check_keys)
        failed = {k.name for k, r in records.items() if r.status.value != "SUCCEEDED"}
        assert failed <= EXPECTED_WARNINGS

    stale = run.run("stale")
    assert stale.returncode == 0 and stale.stdout.strip() == ""
    second = run.run("refresh")
    assert second.returncode == 0
    assert "everything is fresh" in second.stdout
    assert "materializing" not in second.stdout
