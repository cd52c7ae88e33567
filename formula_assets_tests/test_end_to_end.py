"""The whole graph, materialized by the real CLI with the smoke profile on a stable sample."""

import json
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest

from formula_assets.cli.runs import data_versions
from formula_assets.core.arrow import recorded_aggregation, recorded_model
from formula_assets.core.hashing import bytes_hash
from formula_assets.core.protocol import DIRECTIONS
from formula_assets.defs.metadata import recorded_covers
from formula_assets.evaluation.retrieval import ensemble_choices
from formula_assets.evaluation.significance import comparisons
from formula_assets.methods import registry
from formula_assets.reporting.tables import audit_rows, significance_rows
from formula_assets_tests.support.pipeline import SAMPLE, copy_pipeline, ran

EXPECTED_WARNINGS = {"wikidata_formulae_has_concepts"}  # some items link no concept
ALL_ASSETS = {
    "wikidata_formulae", "opt_graphs", "rejected_formulae", "concept_symbols",
    "structural_embeddings", "concept_annotations", "semantic_embeddings", "opt_text_embeddings",
    "opt_token_embeddings",
    "correspondence_metrics", "cv_folds", "retrieval_scores", "ensemble_choices",
    "significance_tests", "name_index", "structure_index", "search_index", "annotation_audit",
}  # fmt: skip


@pytest.mark.slow
def test_refresh_materializes_everything(materialized) -> None:
    run, stdout = materialized
    assert ran(stdout) == ALL_ASSETS | {f"fold_models×{5 * len(registry.trained())}", "report"}
    for asset in ALL_ASSETS:
        assert (run.lake / f"{asset}.parquet").exists(), asset
    assert not (run.lake / "_staged").exists()  # every blocking check passed and published
    assert pq.read_table(run.lake / "wikidata_formulae.parquet").num_rows == SAMPLE
    scores = pq.read_table(run.lake / "retrieval_scores.parquet")
    assert scores.num_rows == 5 * len(registry.lineup().names) * len(DIRECTIONS)
    for fold in range(1, 6):
        for method in registry.trained():
            assert (run.lake / "fold_models" / str(fold) / method / "CURRENT").exists()
    html = (run.lake / "report" / "report.html").read_text()
    assert "Table 1" in html and "Table 2" in html and "data:image/png;base64," in html
    assert "graph_text_cl" in html and "0.0847" in html  # ours beside the paper's
    assert 'src="http' not in html and "<script" not in html  # self-contained
    markdown = (run.lake / "report" / "report.md").read_text()
    assert "| metric | ours | paper | note |" in markdown
    with dg.DagsterInstance.from_config(str(run.home)) as instance:
        from formula_assets.definitions import defs

        # every check that runs with a materialization ran (the probe's freshness check runs
        # from its sensor)
        check_keys = [
            k
            for k in defs.resolve_asset_graph().asset_check_keys
            if k.asset_key.to_user_string() != "wikidata_probe"
        ]
        records = instance.event_log_storage.get_latest_asset_check_execution_by_key(check_keys)
        assert set(records) == set(check_keys)
        failed = {k.name for k, r in records.items() if r.status.value != "SUCCEEDED"}
        assert failed <= EXPECTED_WARNINGS
        # every materialization records what its code version covered (`stale --explain`)
        graph = defs.resolve_asset_graph()
        for key in graph.materializable_asset_keys:
            event = instance.get_latest_materialization_event(key)
            assert event is not None and event.asset_materialization is not None, key
            recorded = recorded_covers(event.asset_materialization.metadata)
            assert recorded == recorded_covers(graph.get(key).metadata), key


@pytest.mark.slow
def test_the_report_takes_its_results_from_tables(materialized) -> None:
    """The ensemble's weights and hubness k, the significance tests and the sentence model
    the report shows are those of the `ensemble_choices`, `significance_tests` and
    `semantic_embeddings` tables (not of some materialization's metadata)."""
    run, _ = materialized
    markdown = (run.lake / "report" / "report.md").read_text()
    weights, hubness_k = ensemble_choices(pq.read_table(run.lake / "ensemble_choices.parquet"))
    assert set(weights) == set(hubness_k) == {1, 2, 3, 4, 5}
    assert json.dumps({str(f): w for f, w in weights.items()}) in markdown
    assert json.dumps({str(f): k for f, k in hubness_k.items()}) in markdown
    tests = comparisons(pq.read_table(run.lake / "significance_tests.parquet"))
    assert tests and all(f"| {' | '.join(row)} |" in markdown for row in significance_rows(tests))
    semantic = pq.read_table(run.lake / "semantic_embeddings.parquet")
    assert recorded_aggregation(semantic) == "sum"
    assert f"| sentence-transformer | {recorded_model(semantic)} |" in markdown
    assert "| semantic aggregation | sum |" in markdown
    audit = pq.read_table(run.lake / "annotation_audit.parquet")
    assert audit.num_rows == SAMPLE
    assert "## Annotation audit" in markdown
    assert all(f"| {' | '.join(row)} |" in markdown for row in audit_rows(audit))
    # the fold models' version row: one digest of every partition's data version
    with dg.DagsterInstance.from_config(str(run.home)) as instance:
        from formula_assets.definitions import defs

        built = data_versions(defs, instance)
    parts = sorted(k.removeprefix("fold_models[")[:-1] for k in built if "[" in k)
    assert len(parts) == 5 * len(registry.trained())
    digest = bytes_hash(*(f"{p}={built[f'fold_models[{p}]']}" for p in parts))
    assert f"| fold_models ({len(parts)} partitions) |" in markdown and f"| {digest} |" in markdown


@pytest.mark.slow
def test_then_nothing_is_stale_and_refresh_runs_nothing(materialized, tmp_path: Path) -> None:
    run = copy_pipeline(materialized[0], tmp_path)
    stale = run.run("stale")
    assert stale.returncode == 0 and stale.stdout.strip() == ""
    # the real command, part by part: fresh, every part as its materialization recorded it
    explained = run.run("stale", "--explain", "opt_graphs")
    assert explained.returncode == 0, explained.stderr
    lines = explained.stdout.splitlines()
    assert lines[0] == "opt_graphs\tFRESH"
    assert lines[1].endswith("as at its last materialization")
    assert "same\tmodule\tformula_assets.syntax.mathml" in lines
    assert all(line.startswith("same\t") for line in lines[2:])
    unknown = run.run("stale", "--explain", "opt_graph")
    assert unknown.returncode == 1 and "no materializable asset 'opt_graph'" in unknown.stderr
    again = run.run("refresh")
    assert again.returncode == 0
    assert "everything is fresh" in again.stdout and ran(again.stdout) == set()
