"""Code versions follow the imports: for every module of the package, an edit changes the
version of exactly the assets whose import closure holds it, and of no other asset.

The closures expected here come from grimp's import graph, an implementation independent of
the `ast` walk in `core.versioning`. Nothing is materialized.
"""

import shutil
from pathlib import Path

import grimp
import pytest

from formula_assets.core import versioning
from formula_assets.definitions import defs

PACKAGE = Path(versioning.__file__).resolve().parents[1]
# Modules that judge, show or schedule data but never make it (the boundary in docs/lineage.md).
OUTSIDE = ("formula_assets.cli", "formula_assets.deploy", "formula_assets.core.versioning")
OUTSIDE_DEFS = ("metadata", "checks", "automation", "publication")


def outside(module: str) -> bool:
    leaf = module.rsplit(".", 1)[-1]
    return (
        leaf == "checks"
        or any(module == o or module.startswith(o + ".") for o in OUTSIDE)
        or module in {f"formula_assets.defs.{d}" for d in OUTSIDE_DEFS}
    )


def defining_modules() -> dict[str, str]:
    """asset key → the module whose function computes it."""
    out = {}
    for assets_def in defs.resolve_asset_graph().assets_defs:
        if not assets_def.is_materializable or not assets_def.keys:
            continue
        module = assets_def.node_def.compute_fn.decorated_fn.__module__
        for key in assets_def.keys:
            out[key.to_user_string()] = module
    return out


MODULES = defining_modules()


def graph_closure(graph: grimp.ImportGraph, module: str) -> set[str]:
    seen, stack = {module}, [module]
    while stack:
        for imported in graph.find_modules_directly_imported_by(stack.pop()):
            wanted = imported.startswith("formula_assets") and not outside(imported)
            if wanted and imported not in seen:
                seen.add(imported)
                stack.append(imported)
    return seen


@pytest.fixture(scope="module")
def import_graph() -> grimp.ImportGraph:
    return grimp.build_graph("formula_assets", cache_dir=None, exclude_type_checking_imports=True)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "formula_assets"
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def versions(root: Path) -> dict[str, str]:
    versioner = versioning.Versioner(root)
    return {asset: versioner.code_version(module) for asset, module in MODULES.items()}


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {asset for asset in before if before[asset] != after[asset]}


def test_every_materializable_asset_is_versioned_from_its_module() -> None:
    graph = defs.resolve_asset_graph()
    assert set(MODULES) == {k.to_user_string() for k in graph.materializable_asset_keys}
    for key in graph.materializable_asset_keys:
        module = MODULES[key.to_user_string()]
        assert graph.get(key).code_version == versioning.code_version(module), key


def test_a_comment_changes_exactly_the_assets_whose_closure_holds_the_module(
    copy: Path, import_graph: grimp.ImportGraph
) -> None:
    closures = {asset: graph_closure(import_graph, module) for asset, module in MODULES.items()}
    before = versions(copy)
    modules = versioning.module_paths(copy, "formula_assets")
    assert len(modules) > 60
    for module, path in modules.items():
        original = path.read_text()
        path.write_text(original + "\n# an edit\n")
        try:
            after = versions(copy)
        finally:
            path.write_text(original)
        expected = {asset for asset, closure in closures.items() if module in closure}
        assert changed(before, after) == expected, module
        if outside(module):
            assert expected == set(), module


def test_the_closures_are_the_expected_ones(import_graph: grimp.ImportGraph) -> None:
    """Spot checks that the boundary and the stage split are what docs/lineage.md says."""
    closure = {asset: graph_closure(import_graph, m) for asset, m in MODULES.items()}
    assert "formula_assets.syntax.mathml" in closure["opt_graphs"]
    assert "formula_assets.syntax.mathml" not in closure["structural_embeddings"]
    assert "formula_assets.syntax.mathml" not in closure["fold_models"]
    assert "formula_assets.semantics.annotations" not in closure["semantic_embeddings"]
    assert "formula_assets.evaluation.ranking" in closure["fold_models"]  # early stopping
    assert "formula_assets.evaluation.inputs" in closure["retrieval_scores"]  # BM25 documents
    assert "formula_assets.reporting.content" in closure["report"]
    assert not any(m.endswith(".checks") for c in closure.values() for m in c)
    assert not any("defs.metadata" in m for c in closure.values() for m in c)


def test_shipped_data_files_count(copy: Path) -> None:
    before = versions(copy)
    snapshot = copy / "ingest" / "data" / "wikidata_formulae_snapshot.jsonl.gz"
    snapshot.write_bytes(snapshot.read_bytes() + b"\0")
    assert changed(before, versions(copy)) == {"wikidata_formulae"}


def test_a_new_import_is_picked_up_without_a_list(copy: Path) -> None:
    before = versions(copy)
    folds = copy / "defs" / "training" / "cv_folds.py"
    folds.write_text(folds.read_text() + "\nfrom formula_assets.syntax import wl_svd  # noqa\n")
    assert changed(before, versions(copy)) == {"cv_folds"}
    target = copy / "syntax" / "wl_svd.py"
    with_import = versions(copy)
    target.write_text(target.read_text() + "\n# now part of cv_folds too\n")
    assert "cv_folds" in changed(with_import, versions(copy))


def test_type_checking_imports_do_not_count(copy: Path) -> None:
    folds = copy / "defs" / "training" / "cv_folds.py"
    folds.write_text(
        folds.read_text()
        + "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        + "    from formula_assets.syntax import wl_svd  # noqa\n"
    )
    versioner = versioning.Versioner(copy)
    assert "formula_assets.syntax.wl_svd" not in versioner.closure(MODULES["cv_folds"])


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("FORMULA_ASSETS_PROFILE", "smoke", {"fold_models"}),
        (
            "FORMULA_ASSETS_EMBEDDING_MODEL",
            "/models/other",
            # the audit embeds its concepts' texts with the model itself
            {
                "semantic_embeddings",
                "opt_text_embeddings",
                "opt_token_embeddings",
                "annotation_audit",
            },
        ),
        ("FORMULA_ASSETS_STYLED_LETTERS", "fold", {"opt_graphs", "rejected_formulae"}),
    ],
)
def test_result_changing_settings_enter_exactly_their_assets(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: set[str]
) -> None:
    for name in (
        "FORMULA_ASSETS_PROFILE",
        "FORMULA_ASSETS_EMBEDDING_MODEL",
        "FORMULA_ASSETS_STYLED_LETTERS",
    ):
        monkeypatch.delenv(name, raising=False)
    before = versions(PACKAGE)
    monkeypatch.setenv(variable, value)
    assert changed(before, versions(PACKAGE)) == expected


def test_an_undeclared_setting_is_an_error(copy: Path) -> None:
    folds = copy / "training" / "folds.py"
    folds.write_text(folds.read_text() + '\nRESULT_SETTINGS = ("no_such_setting",)\n')
    with pytest.raises(ValueError, match="no_such_setting"):
        versioning.Versioner(copy).code_version(MODULES["cv_folds"])
