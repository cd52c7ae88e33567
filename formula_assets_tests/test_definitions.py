"""The code location loads, names what DESIGN.md names, and validates with Dagster's own CLI."""

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

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
    "correspondence_metrics": "analysis",
    "cv_folds": "training",
    "fold_models": "training",
    "retrieval_scores": "evaluation",
    "report": "evaluation",
    "wikidata_probe": "ingest",
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
        ("correspondence_metrics", "correspondence_metrics_in_range"),
        ("correspondence_metrics", "correspondence_inputs_complete"),
        ("cv_folds", "cv_folds_cover_every_formula"),
        ("retrieval_scores", "retrieval_scores_complete"),
        ("retrieval_scores", "retrieval_scores_consistent"),
        ("retrieval_scores", "retrieval_scores_beat_chance"),
    } <= checks


def test_dagster_validates_the_workspace(tmp_path: Path) -> None:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    completed = subprocess.run(
        [
            Path(sys.executable).parent / "dagster",
            "definitions",
            "validate",
            "-w",
            "workspace.yaml",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "All code locations passed validation" in completed.stdout + completed.stderr


def test_definitions_are_a_definitions_object() -> None:
    assert isinstance(defs, dg.Definitions)
