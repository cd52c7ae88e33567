"""A change in one module rebuilds exactly what depends on it — seen through the real CLI.

Each test runs `formula-assets` against a copy of a fully materialized instance and lake,
with a copy of the package whose source was edited first on PYTHONPATH.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from formula_assets.methods import registry
from formula_assets_tests.support.pipeline import (
    ROOT,
    copy_pipeline,
    edited_package,
    listed,
    ran,
    with_package,
)

AUDIT = "annotation_audit"
DOWNSTREAM_OF_OPT = {
    "correspondence_metrics", f"fold_models×{5 * len(registry.trained())}", "retrieval_scores",
    "ensemble_choices", "significance_tests", "search_index", "annotation_audit", "report",
}  # fmt: skip
RENAME_POWER = {
    "syntax/mathml.py": lambda s: s.replace('"msup": ("power",', '"msup": ("superscript",')
}
DROP_ITEM_DESCRIPTION = {
    "semantics/annotations.py": lambda s: s.replace(
        'candidates: list[object] = [row.get("label"), row.get("description")]',
        'candidates: list[object] = [row.get("label")]',
    )
}
LONGER_SHORTLIST = {"audit/concepts.py": lambda s: s.replace("SHORTLIST = 30", "SHORTLIST = 31")}
COMMENT_ONLY = {
    "syntax/mathml.py": lambda s: s + "\n# a comment changes the code version, not the data\n"
}


def code_versions(package: Path | None = None, cwd: Path = ROOT) -> dict[str, str]:
    script = (
        "import json; from formula_assets.definitions import defs; g = defs.resolve_asset_graph();"
        "print(json.dumps({k.to_user_string(): g.get(k).code_version"
        " for k in g.materializable_asset_keys}))"
    )
    env = {"PYTHONPATH": str(package)} if package else {}
    completed = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,  # not the checkout when a copy is meant: `python -c` puts the cwd first
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {k for k in before if before[k] != after[k]}


def test_code_versions_follow_the_source(tmp_path: Path) -> None:
    original = code_versions()
    assert all(original.values())
    # the audit reads formulae's symbols with the parser and rebuilds annotation texts; the
    # concepts' declared symbols are parsed by it too, and so are the annotated symbols of
    # the structure index and of the formulae the name index reads aloud
    parser = code_versions(edited_package(tmp_path / "a", RENAME_POWER), tmp_path)
    assert changed(original, parser) == {
        "opt_graphs", "rejected_formulae", "concept_symbols", "structure_index", "name_index",
        AUDIT,
    }  # fmt: skip
    annotations = code_versions(edited_package(tmp_path / "b", DROP_ITEM_DESCRIPTION), tmp_path)
    assert changed(original, annotations) == {"concept_annotations", AUDIT}


def test_editing_the_audit_changes_only_the_audit_code_version(tmp_path: Path) -> None:
    original = code_versions()
    audit = code_versions(edited_package(tmp_path, LONGER_SHORTLIST), tmp_path)
    assert changed(original, audit) == {AUDIT}


def method_code_versions(package: Path | None = None, cwd: Path = ROOT) -> dict[str, str]:
    """The code each trained method's fold models are made by (their recipes hold it)."""
    script = (
        "import json; from formula_assets.methods import registry;"
        "from formula_assets.defs.training.fold_models import method_code_version as v;"
        "print(json.dumps({m: v(registry.trained_method(m)) for m in registry.trained()}))"
    )
    env = {**os.environ, **({"PYTHONPATH": str(package)} if package else {})}
    completed = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_editing_one_method_changes_only_that_methods_recipes(tmp_path: Path) -> None:
    """fold_models' code version covers every method; a method's recipe only its own code
    and the shared training code, so an edit retrains that method's models alone."""
    original = method_code_versions()
    assert len(set(original.values())) == len(original)
    graph = edited_package(
        tmp_path / "a", {"methods/graph_text_cl.py": lambda s: s + "\n# an edit\n"}
    )
    assert changed(original, method_code_versions(graph, tmp_path)) == {"graph_text_cl"}
    loop = edited_package(tmp_path / "b", {"training/trainer.py": lambda s: s + "\n# an edit\n"})
    assert changed(original, method_code_versions(loop, tmp_path)) == set(original)


@pytest.mark.slow
def test_parser_change_rebuilds_only_its_downstream(materialized, tmp_path: Path) -> None:
    run = with_package(
        copy_pipeline(materialized[0], tmp_path), edited_package(tmp_path, RENAME_POWER)
    )
    stale = run.run("stale")
    assert stale.returncode == 0
    listed = {line.split("\t")[0] for line in stale.stdout.splitlines()}
    assert listed == {
        "opt_graphs",
        "rejected_formulae",
        "concept_symbols",
        "structure_index",
        "name_index",
        AUDIT,
    }
    assert "has a new code version" in stale.stdout
    refresh = run.run("refresh")
    assert refresh.returncode == 0, refresh.stderr[-2000:]
    assert ran(refresh.stdout) == {
        "opt_graphs", "rejected_formulae", "concept_symbols", "structural_embeddings",
        "opt_text_embeddings", "opt_token_embeddings", "structure_index", "name_index",
        *DOWNSTREAM_OF_OPT,
    }  # fmt: skip
    assert run.run("stale").stdout.strip() == ""
    assert ran(run.run("refresh").stdout) == set()


@pytest.mark.slow
def test_annotation_change_rebuilds_only_the_semantic_side(materialized, tmp_path: Path) -> None:
    """Step by step, without the training the parser change's refresh already carries a
    cascade through: the edited annotation texts make their asset stale, its new data its
    readers, the sentence vectors' new data theirs; nothing of the syntactic side, ever."""
    run = copy_pipeline(materialized[0], tmp_path)
    run = with_package(run, edited_package(tmp_path, DROP_ITEM_DESCRIPTION))
    new_code = "has a new code version"
    assert listed(run.run("stale").stdout) == {"concept_annotations": new_code, AUDIT: new_code}

    built = run.materialize("concept_annotations")
    assert built.returncode == 0, built.stderr[-2000:]
    annotations = "has a new dependency data version (concept_annotations)"
    trained = f"fold_models×{5 * len(registry.trained())}"
    readers = {trained, "ensemble_choices", "retrieval_scores", "significance_tests"}
    stale = listed(run.run("stale").stdout)
    assert stale == {"semantic_embeddings": annotations, AUDIT: new_code} | dict.fromkeys(
        readers, annotations
    )

    built = run.materialize("semantic_embeddings")
    assert built.returncode == 0, built.stderr[-2000:]
    stale = listed(run.run("stale").stdout)
    vectors = "has a new dependency data version (semantic_embeddings)"
    assert set(stale) == DOWNSTREAM_OF_OPT
    assert all(vectors in why for why in stale.values())  # each reads the vectors itself
    assert {name for name, why in stale.items() if annotations in why} == readers
    assert not {"opt_graphs", "opt_text_embeddings", "structural_embeddings"} & set(stale)


@pytest.mark.slow
def test_a_change_that_keeps_the_data_stops_the_cascade(materialized, tmp_path: Path) -> None:
    run = with_package(
        copy_pipeline(materialized[0], tmp_path), edited_package(tmp_path, COMMENT_ONLY)
    )
    refresh = run.run("refresh")
    assert refresh.returncode == 0, refresh.stderr[-2000:]
    # the declared symbols are parsed again and come out the same: nothing below them runs
    assert ran(refresh.stdout) == {
        "opt_graphs", "rejected_formulae", "concept_symbols", "structure_index", "name_index",
        AUDIT,
    }  # fmt: skip
    assert run.run("stale").stdout.strip() == ""


@pytest.mark.slow
def test_an_audit_change_rebuilds_the_audit_and_nothing_upstream(
    materialized, tmp_path: Path
) -> None:
    run = with_package(
        copy_pipeline(materialized[0], tmp_path), edited_package(tmp_path, LONGER_SHORTLIST)
    )
    stale = run.run("stale")
    assert {line.split("\t")[0] for line in stale.stdout.splitlines()} == {"annotation_audit"}
    refresh = run.run("refresh")
    assert refresh.returncode == 0, refresh.stderr[-2000:]
    assert "annotation_audit" in ran(refresh.stdout)
    assert ran(refresh.stdout) <= {"annotation_audit", "report"}  # only what reads it
    assert run.run("stale").stdout.strip() == ""
