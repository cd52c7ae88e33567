"""The rules behind the checks of `opt_graphs`, on hand-made graph tables."""

import pyarrow as pa

from formula_assets.syntax.checks import graphs_are_trees, one_graph_per_formula, reject_rate
from formula_assets.syntax.opt import build_opt_graphs
from formula_assets_tests.support.formulae import FORMULAE, GOOD, formulae_table


def built(formulae: dict[str, str | None]):
    return formulae_table(formulae), build_opt_graphs(formulae.items())


def test_one_per_formula_check() -> None:
    formulae, ok = built(FORMULAE)
    assert one_graph_per_formula(formulae, ok.graphs, ok.rejected).passed
    lost = one_graph_per_formula(formulae, ok.graphs.slice(0, 1), ok.rejected)
    assert not lost.passed and lost.metadata["missing"] == 1
    doubled = pa.concat_tables([ok.graphs, ok.graphs.slice(0, 1)])
    assert not one_graph_per_formula(formulae, doubled, ok.rejected).passed


def test_tree_check() -> None:
    _, ok = built({"Q1": GOOD})
    assert graphs_are_trees(ok.graphs).passed
    row = ok.graphs.to_pylist()[0]
    row["edge_parent"] = [0, 1]
    row["edge_child"] = [1, 1]  # node 1 is its own parent; node 2 orphaned
    broken = pa.Table.from_pylist([row], schema=ok.graphs.schema)
    result = graphs_are_trees(broken)
    assert not result.passed and result.metadata["not_trees"] == 1


def test_reject_rate_check() -> None:
    many = {f"Q{i}": GOOD for i in range(1, 200)}
    _, ok = built({**many, "Q999": None})
    assert reject_rate(ok.graphs, ok.rejected).passed  # 1 of 200 = 0.5%
    _, bad = built(FORMULAE)
    result = reject_rate(bad.graphs, bad.rejected)
    assert not result.passed and result.metadata["rate"] == 0.5


def test_reject_rate_is_a_binomial_test_against_one_percent() -> None:
    """P(X ≥ k | n, 1%), computed by hand, decides: chance rejections in small pulls pass."""

    def outcome(good: int, bad: int):
        formulae = {f"Q{i}": GOOD for i in range(good)} | {f"R{i}": None for i in range(bad)}
        _, result = built(formulae)
        return reject_rate(result.graphs, result.rejected)

    one_of_five = outcome(4, 1)  # P(X ≥ 1) = 1 − 0.99⁵ = 0.049
    assert one_of_five.passed and abs(one_of_five.metadata["p_value"] - 0.04901) < 1e-4
    two_of_five = outcome(3, 2)  # P(X ≥ 2) = 1 − 0.99⁵ − 5·0.01·0.99⁴ = 0.00098
    assert not two_of_five.passed and abs(two_of_five.metadata["p_value"] - 0.000980) < 1e-5
    assert outcome(1000, 0).metadata["p_value"] == 1.0
    assert not reject_rate(*(lambda b: (b.graphs, b.rejected))(build_opt_graphs([]))).passed


def test_significance_is_one_percent_and_a_p_value_at_it_passes() -> None:
    """1 rejected of 2: P(X ≥ 1) = 1 − 0.99² = 0.0199, above 1 %: chance, not a broken
    parser; the rule fails only when p is below the significance."""
    _, pulled = built({"Q1": GOOD, "R1": None})
    result = reject_rate(pulled.graphs, pulled.rejected)
    assert result.passed and abs(result.metadata["p_value"] - 0.0199) < 1e-9
    at = result.metadata["p_value"]
    assert reject_rate(pulled.graphs, pulled.rejected, significance=at).passed
    assert not reject_rate(pulled.graphs, pulled.rejected, significance=at + 1e-9).passed


def test_one_parsed_formula_is_enough_and_nothing_is_a_zero_rate() -> None:
    _, one = built({"Q1": GOOD})
    result = reject_rate(one.graphs, one.rejected)
    assert result.passed and result.metadata["rate"] == 0.0
    empty = build_opt_graphs([])
    nothing = reject_rate(empty.graphs, empty.rejected)
    assert nothing.metadata == {
        "rejected": 0, "total": 0, "rate": 0.0, "limit": 0.01, "p_value": 1.0
    }  # fmt: skip
    assert "0 of 0 rejected" in nothing.description


def test_the_tree_check_says_which_way_it_went() -> None:
    _, ok = built({"Q1": GOOD, "Q2": GOOD})
    good = graphs_are_trees(ok.graphs)
    assert good.description.startswith("every graph is a tree")
    assert good.metadata == {"not_trees": 0, "sample": []}
    rows = ok.graphs.to_pylist()
    rows[1]["edge_child"] = [0] * len(rows[1]["edge_child"])  # every edge into the root
    result = graphs_are_trees(pa.Table.from_pylist(rows, schema=ok.graphs.schema))
    assert result.description == "1 graphs are not trees"
    assert result.metadata == {"not_trees": 1, "sample": ["Q2"]}
