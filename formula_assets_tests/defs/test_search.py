"""The search group's indexes through Dagster: the name index embeds each item's names once
(the cache serves a rebuild), the structure index keys every parsed formula and measures
itself on variants of each item's formula; both are in the `search` group."""

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
from latex2mathml.converter import convert

from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource
from formula_assets.defs.search.name_index import name_index, name_index_valid
from formula_assets.defs.search.structure_index import structure_index
from formula_assets.ingest.records import Concept, FormulaRecord, records_to_table
from formula_assets.syntax.opt import build_opt_graphs

RECORDS = [
    FormulaRecord(
        qid="Q35875",
        label="mass–energy equivalence",
        description="physical law relating mass to energy",
        mathml=convert("E = m c^2"),
        concepts=[Concept("Q11423", "mass", None, convert("m"))],
        aliases=["E=mc²"],
    ),
    FormulaRecord(
        qid="Q41591",
        label="Ohm's law",
        description=None,
        mathml=convert("V = R I"),
        enwiki="https://en.wikipedia.org/wiki/Ohm%27s_law",
    ),
    FormulaRecord(qid="Q3", label="broken", description=None, mathml="<math><mi>x"),
]


@dg.asset(name="wikidata_formulae")
def fixture_formulae() -> pa.Table:
    return records_to_table(RECORDS)


@dg.asset(name="opt_graphs")
def fixture_graphs() -> pa.Table:
    return build_opt_graphs([(r.qid, r.mathml) for r in RECORDS]).graphs


def run(lake: Path, cache: Path, assets):
    return dg.materialize(
        assets,
        resources={
            "io_manager": DataLakeIOManager(base_path=str(lake)),
            "sentence_embedder": SentenceEmbedderResource(cache_path=str(cache), batch_size=8),
        },
    )


def metadata(result, node: str) -> dict:
    return result.asset_materializations_for_node(node)[0].metadata


def test_the_name_index_embeds_names_once_and_is_checked(tmp_path: Path) -> None:
    lake, cache = tmp_path / "lake", tmp_path / "cache"
    assets = [fixture_formulae, fixture_graphs, name_index, name_index_valid]
    first = run(lake, cache, assets)
    assert first.success
    assert metadata(first, "name_index")["newly_embedded"].value == 3
    assert metadata(first, "name_index")["with_aliases"].value == 1
    assert metadata(first, "name_index")["with_spoken_formula"].value == 2  # Q3 did not parse
    table = pq.read_table(lake / "name_index.parquet")
    assert table.column("qid").to_pylist() == ["Q3", "Q35875", "Q41591"]
    assert table.column("embedding").type.list_size == 384
    rows = {r["qid"]: r for r in table.to_pylist()}
    assert rows["Q35875"]["names"] == ["mass–energy equivalence", "E=mc²"]
    assert rows["Q41591"]["names"] == ["Ohm's law"]
    assert rows["Q3"]["spoken"] == [] and len(rows["Q41591"]["spoken"]) == 1
    again = run(lake, cache, assets)
    assert metadata(again, "name_index")["newly_embedded"].value == 0  # from the cache
    assert [c.passed for c in first.get_asset_check_evaluations()] == [True]


def test_the_structure_index_keys_parsed_formulae_and_measures_itself(tmp_path: Path) -> None:
    result = run(
        tmp_path / "lake", tmp_path / "cache", [fixture_formulae, fixture_graphs, structure_index]
    )
    assert result.success
    table = pq.read_table(tmp_path / "lake" / "structure_index.parquet")
    assert sorted(table.column("qid").to_pylist()) == ["Q35875", "Q41591"]  # Q3 did not parse
    meta = metadata(result, "structure_index")
    assert meta["formulae"].value == 2 and meta["distinct_patterns"].value == 2
    assert meta["variant_success_at_1"].value["renamed"] == 1.0
    assert meta["variant_quality"].value["all"]["queries"] >= 4


def test_the_indexes_are_in_the_search_group() -> None:
    from formula_assets.definitions import defs

    graph = defs.resolve_asset_graph()
    for name in ("name_index", "structure_index", "search_index"):
        assert graph.get(dg.AssetKey(name)).group_name == "search"
    assert set(graph.get(dg.AssetKey("name_index")).parent_keys) == {
        dg.AssetKey("wikidata_formulae"),
        dg.AssetKey("opt_graphs"),
        dg.AssetKey("sentence_model"),
    }
    assert set(graph.get(dg.AssetKey("structure_index")).parent_keys) == {
        dg.AssetKey("wikidata_formulae"),
        dg.AssetKey("opt_graphs"),
    }
