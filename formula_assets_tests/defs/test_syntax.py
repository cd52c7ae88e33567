"""`opt_graphs` and `rejected_formulae` through Dagster, and the checks that guard them."""

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.syntax import (
    opt_graphs_are_trees,
    opt_graphs_one_per_formula,
    opt_graphs_reject_rate,
    parse_formulae,
)
from formula_assets.opt import build_opt_graphs
from formula_assets.wikidata import FormulaRecord, records_to_table

GOOD = "<math><mfrac><mi>a</mi><mi>b</mi></mfrac></math>"
FORMULAE = {
    "Q1": GOOD,
    "Q2": "<math><msup><mi>x</mi><mn>2</mn></msup></math>",
    "Q3": "<!DOCTYPE math [<!ENTITY x SYSTEM 'file:///etc/passwd'>]><math>&x;</math>",
    "Q4": None,
}


def formulae_table(formulae: dict[str, str | None]) -> pa.Table:
    return records_to_table(
        FormulaRecord(qid=q, label=q, description=None, mathml=m) for q, m in formulae.items()
    )


def test_parse_assets_write_graphs_and_quarantine(tmp_path: Path) -> None:
    @dg.asset(name="wikidata_formulae")
    def fixture_formulae() -> pa.Table:
        return formulae_table(FORMULAE)

    result = dg.materialize(
        [fixture_formulae, parse_formulae],
        resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))},
    )
    assert result.success
    graphs = pq.read_table(tmp_path / "opt_graphs.parquet").to_pylist()
    rejected = pq.read_table(tmp_path / "rejected_formulae.parquet").to_pylist()
    assert [g["qid"] for g in graphs] == ["Q1", "Q2"]
    assert graphs[0]["node_tokens"] == ["frac", "a", "b"]
    assert graphs[0]["edge_roles"] == ["num", "den"]
    assert graphs[1]["linearised_opt"] == "power x 2"
    assert [(r["qid"], r["stage"]) for r in rejected] == [("Q3", "parse"), ("Q4", "parse")]
    assert "DTD" in rejected[0]["reason"]
    metadata = result.asset_materializations_for_node("parse_formulae")
    by_key = {m.asset_key.to_user_string(): m.metadata for m in metadata}
    assert by_key["opt_graphs"]["dagster/row_count"].value == 2
    assert by_key["rejected_formulae"]["rejected"].value == 2
    assert by_key["opt_graphs"]["vocabulary_size"].value == 6  # frac a b power x 2


def built(formulae: dict[str, str | None]):
    return formulae_table(formulae), build_opt_graphs(formulae.items())


def test_one_per_formula_check() -> None:
    formulae, ok = built(FORMULAE)
    assert opt_graphs_one_per_formula(ok.graphs, formulae, ok.rejected).passed
    lost = opt_graphs_one_per_formula(ok.graphs.slice(0, 1), formulae, ok.rejected)
    assert not lost.passed and lost.metadata["missing"].value == 1
    doubled = pa.concat_tables([ok.graphs, ok.graphs.slice(0, 1)])
    assert not opt_graphs_one_per_formula(doubled, formulae, ok.rejected).passed


def test_tree_check() -> None:
    _, ok = built({"Q1": GOOD})
    assert opt_graphs_are_trees(ok.graphs).passed
    row = ok.graphs.to_pylist()[0]
    row["edge_parent"] = [0, 1]
    row["edge_child"] = [1, 1]  # node 1 is its own parent; node 2 orphaned
    broken = pa.Table.from_pylist([row], schema=ok.graphs.schema)
    result = opt_graphs_are_trees(broken)
    assert not result.passed and result.metadata["not_trees"].value == 1


def test_reject_rate_check() -> None:
    many = {f"Q{i}": GOOD for i in range(1, 200)}
    _, ok = built({**many, "Q999": None})
    assert opt_graphs_reject_rate(ok.graphs, ok.rejected).passed  # 1 of 200 = 0.5%
    _, bad = built(FORMULAE)
    result = opt_graphs_reject_rate(bad.graphs, bad.rejected)
    assert not result.passed and result.metadata["rate"].value == 0.5
