"""Code versions follow the imports: for every module of the package, an edit changes the
version of exactly the assets whose import closure holds it, and of no other asset.

The closures expected here come from grimp's import graph, an implementation independent of
the `ast` walk in `core.versioning`. Nothing is materialized.
"""

import dataclasses
import re
import shutil
from pathlib import Path

import grimp
import pytest

from formula_assets.core import versioning
from formula_assets.core.hashing import bytes_hash
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


def test_the_parts_are_what_the_version_hashes_and_name_the_closure_and_settings() -> None:
    versioner = versioning.Versioner()
    for asset, module in MODULES.items():
        parts = versioner.parts(module)
        assert versioning.version_of(parts) == versioner.code_version(module), asset
        kinds = {kind: [p.name for p in parts if p.kind == kind] for kind in ("module", "setting")}
        assert kinds["module"] == versioner.closure(module), asset
        assert kinds["setting"] == versioner.result_settings(module), asset
    covered = versioning.covers(versioner.parts(MODULES["wikidata_formulae"]))
    assert any(label.startswith("data ingest/data/") for label in covered)
    assert (
        covered["module formula_assets.core.wikidata"]
        == bytes_hash((PACKAGE / "core" / "wikidata.py").read_bytes())[:12]
    )


def test_an_edit_changes_the_digest_of_that_part_alone(copy: Path) -> None:
    module = MODULES["opt_graphs"]
    before = versioning.covers(versioning.Versioner(copy).parts(module))
    mathml = copy / "syntax" / "mathml.py"
    mathml.write_text(mathml.read_text() + "\n# an edit\n")
    after = versioning.covers(versioning.Versioner(copy).parts(module))
    assert before.keys() == after.keys()
    assert {label for label in before if before[label] != after[label]} == {
        "module formula_assets.syntax.mathml"
    }


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
        # the profile trains the models, and says which methods there are (the registry):
        # what Table 2, the ensemble, the index and the audit score
        (
            "FORMULA_ASSETS_PROFILE",
            "smoke",
            {
                "fold_models",
                "retrieval_scores",
                "ensemble_choices",
                "significance_tests",
                "search_index",
                "annotation_audit",
            },
        ),
        (
            "FORMULA_ASSETS_EMBEDDING_MODEL",
            "/models/other",
            # the audit embeds its concepts' texts with the model itself, and the name index
            # the items' names
            {
                "semantic_embeddings",
                "opt_text_embeddings",
                "opt_token_embeddings",
                "annotation_audit",
                "name_index",
            },
        ),
        # the declared symbols are parsed as the formulae are
        (
            "FORMULA_ASSETS_STYLED_LETTERS",
            "fold",
            {
                "opt_graphs",
                "rejected_formulae",
                "concept_symbols",
                "structure_index",
                "name_index",
                "annotation_audit",
            },
        ),
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


# ---------------------------------------------------------------- tiny packages, known graphs


def package(root: Path, files: dict[str, str]) -> Path:
    """Writes a package `pkg` under `root` from {relative path: source}; returns its folder."""
    folder = root / "pkg"
    for relative, source in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return folder


def test_module_names_follow_the_files_and_skip_hidden_and_cache_folders(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "",
            "sub/__init__.py": "",
            "sub/deep/__init__.py": "",
            "sub/deep/leaf.py": "",
            ".hidden/x.py": "",
            "__pycache__/y.py": "",
            "sub/.venv/z.py": "",
        },
    )
    assert versioning.module_paths(root, "pkg") == {
        "pkg": root / "__init__.py",
        "pkg.a": root / "a.py",
        "pkg.sub": root / "sub" / "__init__.py",
        "pkg.sub.deep": root / "sub" / "deep" / "__init__.py",
        "pkg.sub.deep.leaf": root / "sub" / "deep" / "leaf.py",
    }


IMPORT_FORMS = {
    "__init__.py": "",
    "base.py": "",
    "other.py": "",
    "sub/__init__.py": "from .inner import thing\n",
    "sub/inner.py": "thing = 1\n",
    "sub/sibling.py": "from .inner import thing\n",
    "sub/up.py": "from ..base import x\n",
    "sub/deep/__init__.py": "",
    "sub/deep/far.py": "from ...other import y\nfrom .. import inner\n",
    "plain.py": "import pkg.base\n",
    "dotted.py": "import os, pkg.sub.inner\n",
    "from_here.py": "from . import base, other as renamed\n",
    "name_from_package.py": "from pkg.sub import thing\n",
    "lazy.py": "def f():\n    class C:\n        def g(self):\n            from pkg import base\n",
    "self_import.py": "import pkg.self_import\nfrom pkg import base\n",
    "outside.py": "import json\nfrom collections import abc\n",
}


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("pkg", set()),
        ("pkg.sub", {"pkg.sub.inner"}),  # a package's `.` is the package itself
        ("pkg.sub.sibling", {"pkg.sub.inner"}),  # a module's `.` is its package
        ("pkg.sub.up", {"pkg.base"}),  # `..` one package up
        ("pkg.sub.deep.far", {"pkg.other", "pkg.sub.inner"}),  # `...`, and `from .. import m`
        ("pkg.plain", {"pkg.base"}),
        ("pkg.dotted", {"pkg.sub.inner"}),  # not its ancestors: only what is named
        ("pkg.from_here", {"pkg.base", "pkg.other"}),
        ("pkg.name_from_package", {"pkg.sub"}),  # a name inside a package: the package
        ("pkg.lazy", {"pkg.base"}),  # nested in a function and a class
        ("pkg.self_import", {"pkg.base"}),
        ("pkg.outside", set()),
    ],
)
def test_every_form_of_import_resolves_to_the_module_it_names(
    tmp_path: Path, module: str, expected: set[str]
) -> None:
    versioner = versioning.Versioner(package(tmp_path, IMPORT_FORMS))
    info = versioner.module(module)
    assert info.imports == expected
    assert info.is_package == (info.path.name == "__init__.py")


def test_only_imports_that_run_outside_type_checkers_count(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "__init__.py": "",
            **{f"{m}.py": "" for m in "abcdef"},
            "typed.py": (
                "import sys\n"
                "import typing\n"
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from pkg import a\n"
                "if typing.TYPE_CHECKING:\n"
                "    from pkg import b\n"
                "else:\n"
                "    from pkg import c\n"
                "if TYPE_CHECKING:\n"
                "    pass\n"
                "else:\n"
                "    def lazy():\n"
                "        import pkg.d\n"
                "if sys.platform:\n"  # an ordinary condition: both branches may run
                "    from pkg import e\n"
                "else:\n"
                "    import pkg.f\n"
            ),
        },
    )
    versioner = versioning.Versioner(root)
    assert versioner.module("pkg.typed").imports == {"pkg.c", "pkg.d", "pkg.e", "pkg.f"}


def test_the_closure_is_transitive_survives_cycles_and_stops_at_checks(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "__init__.py": "",
            "asset.py": "from pkg import model, checks\n",
            "model.py": "from pkg.util import helper\n",
            "util.py": "import pkg.model\nhelper = 1\n",  # a cycle back to model
            "checks.py": "import pkg.rules\n",
            "rules.py": "",
            "unrelated.py": "import pkg.asset\n",
        },
    )
    versioner = versioning.Versioner(root)
    assert versioner.closure("pkg.asset") == ["pkg.asset", "pkg.model", "pkg.util"]
    assert versioner.closure("pkg.util") == ["pkg.model", "pkg.util"]
    before = versioner.code_version("pkg.asset")
    for outside_module in ("checks.py", "rules.py", "unrelated.py"):
        (root / outside_module).write_text("# edited\n" + (root / outside_module).read_text())
        assert versioning.Versioner(root).code_version("pkg.asset") == before, outside_module
    (root / "util.py").write_text((root / "util.py").read_text() + "# edited\n")
    assert versioning.Versioner(root).code_version("pkg.asset") != before


def test_a_closure_without_a_module_does_not_pass_through_it(tmp_path: Path) -> None:
    """What `fold_models` uses for one method's recipe: its closure short of the registry."""
    root = package(
        tmp_path,
        {
            "__init__.py": "",
            "asset.py": "from pkg import registry, shared\n",
            "registry.py": "from pkg import method\nRESULT_SETTINGS = ('profile',)\n",
            "method.py": "from pkg import shared\n",
            "shared.py": "",
        },
    )
    versioner = versioning.Versioner(root)
    without = frozenset({"pkg.registry"})
    assert versioner.closure("pkg.asset", without) == ["pkg.asset", "pkg.shared"]
    assert versioner.result_settings("pkg.asset", without) == []
    assert versioner.result_settings("pkg.asset") == ["profile"]
    before, whole = (
        versioner.code_version("pkg.asset", without),
        versioner.code_version("pkg.asset"),
    )
    (root / "method.py").write_text("# edited\n" + (root / "method.py").read_text())
    edited = versioning.Versioner(root)
    assert edited.code_version("pkg.asset", without) == before
    assert edited.code_version("pkg.asset") != whole
    (root / "shared.py").write_text("# edited\n")
    assert versioning.Versioner(root).code_version("pkg.asset", without) != before


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("formula_assets.syntax.checks", False),
        ("formula_assets.defs.checks", False),
        ("formula_assets.cli", False),
        ("formula_assets.cli.refresh", False),
        ("formula_assets.core.versioning", False),
        ("formula_assets.client", True),  # shares a prefix with `cli`, not a package
        ("formula_assets.syntax.checks_io", True),
        ("formula_assets.syntax.opt", True),
    ],
)
def test_is_versioned_is_a_bool_on_the_documented_boundary(module: str, expected: bool) -> None:
    assert versioning.is_versioned(module) is expected


def test_module_infos_are_immutable(tmp_path: Path) -> None:
    """The versioner caches them: nobody may alter the graph it has read."""
    info = versioning.Versioner(package(tmp_path, IMPORT_FORMS)).module("pkg.plain")
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.imports = frozenset()  # type: ignore[misc]
    part = versioning.Versioner(package(tmp_path, IMPORT_FORMS)).parts("pkg.plain")[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        part.content = b""  # type: ignore[misc]  # a recorded part is what was hashed


def test_settings_declared_with_an_annotation_count(tmp_path: Path) -> None:
    root = package(
        tmp_path,
        {
            "__init__.py": "",
            "asset.py": "import pkg.model\nRESULT_SETTINGS: tuple[str, ...] = ('profile',)\n",
            "model.py": "RESULT_SETTINGS: tuple[str, ...]\nRESULT_SETTINGS = ('styled_letters',)\n",
            "plain.py": "",
        },
    )
    versioner = versioning.Versioner(root)
    assert versioner.result_settings("pkg.asset") == ["profile", "styled_letters"]
    assert versioner.result_settings("pkg.model") == ["styled_letters"]
    assert versioner.result_settings("pkg.plain") == []


@pytest.mark.parametrize("value", ["['profile']", "('profile', 1)", "'profile'"])
def test_settings_declared_other_than_a_tuple_of_names_are_an_error(
    tmp_path: Path, value: str
) -> None:
    root = package(tmp_path, {"__init__.py": "", "asset.py": f"RESULT_SETTINGS = {value}\n"})
    with pytest.raises(ValueError, match="must be a tuple of setting names"):
        versioning.Versioner(root).result_settings("pkg.asset")


def test_the_module_level_functions_read_the_installed_package() -> None:
    """`code_version(__name__)` is what the definitions call; a version is 16 hex characters
    (64 bits of SHA-256), the width stored versions are compared at, so it may not drift."""
    module = "formula_assets.core.hashing"
    versioner = versioning.Versioner(PACKAGE)
    assert versioning.closure(module) == versioner.closure(module)
    assert module in versioning.closure(module)
    version = versioning.code_version(module)
    assert version == versioner.code_version(module)
    assert re.fullmatch("[0-9a-f]{16}", version)
    assert versioning.is_package_module(module)
    assert not versioning.is_package_module("formula_assets_tests.methods.test_adding_a_method")


def test_the_documented_boundary_is_the_one_the_versions_use() -> None:
    """docs/lineage.md shows `boundary_table()`, made from `UNVERSIONED` and the modules only
    it reaches: a module added to the boundary, or reached only through it, shows there."""
    documented = (versioning.PACKAGE_DIR.parent / "docs" / "lineage.md").read_text()
    table = versioning.boundary_table()
    assert table in documented
    for module in versioning.UNVERSIONED:  # each names a module of the package
        assert not versioning.is_versioned(module) and versioning.is_package_module(module)
    rows = table.splitlines()
    assert "`defs/publication.py`" in table and "`core/staging.py`" in rows[-1]


def test_unreached_modules_are_those_no_asset_module_imports(tmp_path: Path) -> None:
    root = tmp_path / "formula_assets"
    for relative, source in {
        "__init__.py": "",
        "defs/__init__.py": "",
        "defs/asset.py": "from formula_assets import used\nfrom formula_assets.cli import run\n",
        "used.py": "",
        "lonely.py": "",
        "cli/__init__.py": "from formula_assets import behind\n",
        "cli/run.py": "",
        "behind.py": "",
    }.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(source)
    versioner = versioning.Versioner(root)
    assert versioning.unreached(versioner) == ["formula_assets.behind", "formula_assets.lonely"]
    assert (
        versioning.boundary_table(versioner)
        .splitlines()[-1]
        .startswith("| `behind.py`, `lonely.py` | imported only through")
    )
