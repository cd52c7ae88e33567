"""`opt_graphs` and `rejected_formulae` through Dagster, and the checks that guard them."""

from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from formula_assets.defs.io_managers import DataLakeIOManager
from formula_assets.defs.syntax.opt_graphs import parse_formulae
from formula_assets_tests.support.formulae import FORMULAE, GOOD, formulae_table

# Enough good formulae that two rejections stay under the 1% reject-rate limit.
MANY = {**FORMULAE, **{f"Q{i}": GOOD for i in range(100, 400)}}


def test_parse_assets_write_graphs_and_quarantine(tmp_path: Path) -> None:
    @dg.asset(name="wikidata_formulae")
    def fixture_formulae() -> pa.Table:
        return formulae_table(MANY)

    result = dg.materialize(
        [fixture_formulae, parse_formulae],
        resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))},
    )
    assert result.success
    graphs = pq.read_table(tmp_path / "opt_graphs.parquet").to_pylist()
    rejected = pq.read_table(tmp_path / "rejected_formulae.parquet").to_pylist()
    assert [g["qid"] for g in graphs[:3]] == ["Q1", "Q2", "Q100"] and len(graphs) == 302
    assert graphs[0]["node_tokens"] == ["frac", "a", "b"]
    assert graphs[0]["edge_roles"] == ["num", "den"]
    assert graphs[1]["linearised_opt"] == "power x 2"
    assert [(r["qid"], r["stage"]) for r in rejected] == [("Q3", "parse"), ("Q4", "parse")]
    assert "DTD" in rejected[0]["reason"]
    metadata = result.asset_materializations_for_node("parse_formulae")
    by_key = {m.asset_key.to_user_string(): m.metadata for m in metadata}
    assert by_key["opt_graphs"]["dagster/row_count"].value == 302
    assert by_key["rejected_formulae"]["rejected"].value == 2
    assert by_key["opt_graphs"]["vocabulary_size"].value == 6  # frac a b power x 2


def checks_of(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def test_checks_run_inside_the_parse_step(tmp_path: Path) -> None:
    @dg.asset(name="wikidata_formulae")
    def fixture_formulae() -> pa.Table:
        return formulae_table({f"Q{i}": GOOD for i in range(1, 200)})

    result = dg.materialize(
        [fixture_formulae, parse_formulae],
        resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))},
    )
    assert checks_of(result) == {
        "opt_graphs_one_per_formula": True,
        "opt_graphs_are_trees": True,
        "opt_graphs_reject_rate": True,
    }


def test_a_failed_blocking_check_stops_what_depends_on_the_graphs(tmp_path: Path) -> None:
    @dg.asset(name="wikidata_formulae")
    def fixture_formulae() -> pa.Table:
        return formulae_table(FORMULAE)  # half the formulae are rejected: over the 1% limit

    @dg.asset(deps=["opt_graphs"])
    def downstream() -> None:
        raise AssertionError("must not run after a failed blocking check")

    result = dg.materialize(
        [fixture_formulae, parse_formulae, downstream],
        resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))},
        raise_on_error=False,
    )
    assert checks_of(result)["opt_graphs_reject_rate"] is False
    assert not result.success
    assert "downstream" not in {
        e.asset_key.to_user_string() for e in result.get_asset_materialization_events()
    }


def test_either_table_can_be_materialized_alone(tmp_path: Path) -> None:
    @dg.asset(name="wikidata_formulae")
    def fixture_formulae() -> pa.Table:
        return formulae_table({"Q1": GOOD})

    resources = {"io_manager": DataLakeIOManager(base_path=str(tmp_path))}
    dg.materialize([fixture_formulae], resources=resources)
    only_graphs = dg.materialize(
        [fixture_formulae, parse_formulae], selection=["opt_graphs"], resources=resources
    )
    assert only_graphs.success
    assert (tmp_path / "opt_graphs.parquet").exists()
    assert not (tmp_path / "rejected_formulae.parquet").exists()
    assert set(checks_of(only_graphs)) == {
        "opt_graphs_one_per_formula",
        "opt_graphs_are_trees",
        "opt_graphs_reject_rate",
    }
    only_rejected = dg.materialize(
        [fixture_formulae, parse_formulae], selection=["rejected_formulae"], resources=resources
    )
    assert only_rejected.success and (tmp_path / "rejected_formulae.parquet").exists()
    assert checks_of(only_rejected) == {}


def test_the_styled_letter_setting_reaches_the_graphs(tmp_path: Path, monkeypatch) -> None:
    """FORMULA_ASSETS_STYLED_LETTERS, read where the step starts, reaches the parser."""
    styled = '<math><mrow><mi>&#x211D;</mi><mo>=</mo><mi mathvariant="bold">F</mi></mrow></math>'

    @dg.asset(name="wikidata_formulae")
    def fixture_formulae() -> pa.Table:
        return formulae_table({"Q1": styled})

    def tokens() -> list[list[str]]:
        result = dg.materialize(
            [fixture_formulae, parse_formulae],
            selection=["wikidata_formulae", "opt_graphs"],
            resources={"io_manager": DataLakeIOManager(base_path=str(tmp_path))},
        )
        assert result.success
        return pq.read_table(tmp_path / "opt_graphs.parquet").column("node_tokens").to_pylist()

    monkeypatch.delenv("FORMULA_ASSETS_STYLED_LETTERS", raising=False)
    assert tokens() == [["group", "double-struck R", "=", "bold F"]]
    monkeypatch.setenv("FORMULA_ASSETS_STYLED_LETTERS", "fold")
    assert tokens() == [["group", "R", "=", "F"]]
