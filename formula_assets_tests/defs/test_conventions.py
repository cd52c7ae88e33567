"""Owners, code versions and the automation condition are set once, when the definitions load
(`defs.conventions`), not repeated on every asset."""

from pathlib import Path

import dagster as dg

from formula_assets.core import versioning
from formula_assets.defs import conventions
from formula_assets.defs.automation import AUTOMATION, MODEL_OBSERVATION
from formula_assets.defs.conventions import with_conventions
from formula_assets.defs.ingest.wikidata_formulae import wikidata_formulae
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets.defs.semantics.sentence_model import sentence_model
from formula_assets.defs.syntax.opt_graphs import parse_formulae

DEFS_FOLDER = Path(conventions.__file__).parent
RESOURCES = {"wikidata": WikidataResource()}


@dg.asset
def outside_the_package() -> None: ...


def test_the_package_assets_get_the_shared_settings() -> None:
    defs = with_conventions(
        dg.Definitions(
            assets=[wikidata_formulae, parse_formulae, sentence_model, outside_the_package],
            resources=RESOURCES,
        )
    )
    graph = defs.resolve_asset_graph()
    for name, module in (
        ("wikidata_formulae", "formula_assets.defs.ingest.wikidata_formulae"),
        ("opt_graphs", "formula_assets.defs.syntax.opt_graphs"),
        ("rejected_formulae", "formula_assets.defs.syntax.opt_graphs"),
    ):
        node = graph.get(dg.AssetKey(name))
        assert list(node.owners) == list(conventions.OWNERS), name
        assert node.code_version == versioning.code_version(module), name
        assert node.automation_condition == AUTOMATION, name
    source = graph.get(sentence_model.key)  # observed, not materialized: as it is declared
    assert list(source.owners) == [] and source.automation_condition == MODEL_OBSERVATION
    other = graph.get(outside_the_package.key)  # not the project's (a test fixture)
    assert (list(other.owners), other.code_version, other.automation_condition) == ([], None, None)


def test_what_an_asset_declares_itself_is_kept() -> None:
    own = wikidata_formulae.map_asset_specs(
        lambda spec: spec.replace_attributes(owners=["team:someone-else"], code_version="pinned")
    )
    defs = with_conventions(dg.Definitions(assets=[own], resources=RESOURCES))
    node = defs.resolve_asset_graph().get(own.key)
    assert (list(node.owners), node.code_version) == (["team:someone-else"], "pinned")
    assert node.automation_condition == AUTOMATION  # what it does not declare, it gets


def test_no_asset_module_repeats_them() -> None:
    repeated = {
        str(path.relative_to(DEFS_FOLDER)): pattern
        for path in sorted(DEFS_FOLDER.rglob("*.py"))
        if path.name != "conventions.py"
        for pattern in ("team:formula-assets", "automation_condition=AUTOMATION", "code_version=")
        if pattern in path.read_text()
    }
    assert repeated == {}
