"""The code location loads with the asset keys, groups and checks the docs name, every
selection a user can type resolves, and `dg` accepts the project."""

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from formula_assets.definitions import defs

ROOT = Path(__file__).resolve().parent.parent
EXPECTED_GROUPS = {
    "wikidata_formulae": "ingest",
    "opt_graphs": "syntax",
    "rejected_formulae": "syntax",
    "structural_embeddings": "syntax",
    "concept_annotations": "semantics",
    "semantic_embeddings": "semantics",
    "opt_text_embeddings": "semantics",
    "opt_token_embeddings": "semantics",
    "correspondence_metrics": "analysis",
    "cv_folds": "training",
    "fold_models": "training",
    "retrieval_scores": "evaluation",
    "ensemble_choices": "evaluation",
    "significance_tests": "evaluation",
    "name_index": "search",
    "structure_index": "search",
    "search_index": "search",
    "annotation_audit": "audit",
    "report": "evaluation",
    "wikidata_probe": "ingest",
    "sentence_model": "semantics",
}


def test_assets_and_groups() -> None:
    graph = defs.resolve_asset_graph()
    groups = {key.to_user_string(): graph.get(key).group_name for key in graph.get_all_asset_keys()}
    assert EXPECTED_GROUPS.items() <= groups.items()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.description, f"{key.to_user_string()} has no description"
        assert (node.owners and node.kinds) or node.is_observable, key.to_user_string()
        if node.is_materializable:
            assert node.code_version, f"{key.to_user_string()} has no code version"


def test_checks_are_attached() -> None:
    graph = defs.resolve_asset_graph()
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert {
        ("wikidata_formulae", "wikidata_formulae_unique_qid"),
        ("wikidata_formulae", "wikidata_formulae_mathml_present"),
        ("wikidata_formulae", "wikidata_formulae_has_concepts"),
        ("wikidata_formulae", "wikidata_formulae_row_count"),
        ("opt_graphs", "opt_graphs_one_per_formula"),
        ("opt_graphs", "opt_graphs_are_trees"),
        ("opt_graphs", "opt_graphs_reject_rate"),
        ("structural_embeddings", "structural_embeddings_valid"),
        ("semantic_embeddings", "semantic_embeddings_valid"),
        ("opt_text_embeddings", "opt_text_embeddings_valid"),
        ("opt_token_embeddings", "opt_token_embeddings_valid"),
        ("correspondence_metrics", "correspondence_metrics_in_range"),
        ("correspondence_metrics", "correspondence_inputs_complete"),
        ("cv_folds", "cv_folds_cover_every_formula"),
        ("retrieval_scores", "retrieval_scores_complete"),
        ("retrieval_scores", "retrieval_scores_consistent"),
        ("retrieval_scores", "retrieval_scores_beat_chance"),
        ("search_index", "search_index_complete"),
        ("annotation_audit", "annotation_audit_one_row_per_item"),
        ("annotation_audit", "annotation_audit_ranks_in_range"),
    } <= checks


def dg_command(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return subprocess.run(
        [str(Path(sys.executable).parent / "dg"), *args],
        cwd=ROOT,
        env={**os.environ, "DAGSTER_HOME": str(home), "VIRTUAL_ENV": str(Path(sys.prefix))},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_dg_checks_the_project(tmp_path: Path) -> None:
    completed = dg_command("check", "defs", home=tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "All definitions loaded successfully" in completed.stdout + completed.stderr


def test_dg_lists_every_asset(tmp_path: Path) -> None:
    completed = dg_command("list", "defs", "--json", home=tmp_path)
    assert completed.returncode == 0, completed.stderr
    listed = {a["asset_key"] for a in json.loads(completed.stdout)["assets"]}
    assert set(EXPECTED_GROUPS) <= listed


def test_everything_upstream_of_any_asset_is_a_valid_selection() -> None:
    """`dg launch --assets '*correspondence_metrics'` and its kind must resolve for every asset
    (the parse step is subsettable, so it may run for one of its two tables)."""
    graph = defs.resolve_asset_graph()
    job = defs.resolve_implicit_global_asset_job_def()
    for key in graph.materializable_asset_keys:
        selection = dg.AssetSelection.assets(key).upstream().resolve(graph)
        subset = job.get_subset(asset_selection=selection)
        assert subset.asset_layer.executable_asset_keys == selection, key
    upstream_of_table_1 = dg.AssetSelection.assets("correspondence_metrics").upstream()
    assert dg.AssetKey("rejected_formulae") not in upstream_of_table_1.resolve(graph)


def test_table_contracts_warn_on_schema_changes() -> None:
    graph = defs.resolve_asset_graph()
    guarded = {
        k.asset_key.to_user_string()
        for k in graph.asset_check_keys
        if k.name == "column_schema_change"
    }
    assert guarded == {
        "wikidata_formulae",
        "opt_graphs",
        "rejected_formulae",
        "concept_symbols",
        "concept_annotations",
        "correspondence_metrics",
        "cv_folds",
        "retrieval_scores",
        "ensemble_choices",
        "significance_tests",
        "structure_index",
        "search_index",
        "annotation_audit",
    }


def test_the_source_has_a_freshness_check_and_a_sensor_that_runs_it() -> None:
    graph = defs.resolve_asset_graph()
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert ("wikidata_probe", "freshness_check") in checks
    assert ("wikidata_formulae", "wikidata_formulae_current") in checks
    assert {s.name for s in defs.sensors} >= {"wikidata_probe_freshness"}


def test_definitions_are_a_definitions_object() -> None:
    assert isinstance(defs, dg.Definitions)


def test_runs_execute_in_one_process_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from formula_assets import definitions

    monkeypatch.delenv("FORMULA_ASSETS_EXECUTOR", raising=False)
    assert definitions._executor() is None  # Dagster's default: a process per step
    monkeypatch.setenv("FORMULA_ASSETS_EXECUTOR", "in_process")
    assert definitions._executor() is dg.in_process_executor
    monkeypatch.setenv("FORMULA_ASSETS_EXECUTOR", "threads")
    with pytest.raises(ValueError, match="must be one of multiprocess, in_process"):
        definitions._executor()
