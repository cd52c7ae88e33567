"""A formula's symbols: its OPT's leaves, and subscripted leaves as `base_subscript`."""

import pytest

from formula_assets.syntax.mathml import ParseOptions
from formula_assets.syntax.opt import build_opt_graphs
from formula_assets.syntax.symbols import formula_symbols


def symbols(mathml: str) -> list[str]:
    graphs = build_opt_graphs([("Q1", mathml)], ParseOptions()).graphs
    row = graphs.to_pylist()[0]
    return formula_symbols(row["node_tokens"], row["edge_parent"], row["edge_child"])


def test_leaves_are_symbols_once_each_and_operators_over_children_are_not() -> None:
    # E = m c²: the power node has children, so it is no symbol; `=` is a leaf
    found = symbols("<math><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></math>")
    assert found == sorted(["E", "=", "m", "c", "2"])
    assert symbols("<math><mi>m</mi><mo>+</mo><mi>m</mi></math>") == ["+", "m"]


def test_a_subscripted_leaf_is_also_one_symbol() -> None:
    found = symbols("<math><msub><mi>ε</mi><mn>0</mn></msub><mi>E</mi></math>")
    assert "ε_0" in found
    assert {"ε", "0", "E"} <= set(found)  # the parts stay symbols too


def test_a_subscript_over_an_expression_is_not_a_symbol() -> None:
    found = symbols(
        "<math><msub><mi>x</mi><mrow><mi>i</mi><mo>+</mo><mn>1</mn></mrow></msub></math>"
    )
    assert not any("_" in s for s in found)
    assert {"x", "i", "+", "1"} <= set(found)


def test_by_hand_on_graph_rows() -> None:
    # subscript(k, B) over a leaf, power(subscript(T, e), 2): only leaf-over-leaf compounds
    tokens = ["times", "subscript", "k", "B", "power", "subscript", "T", "e", "2"]
    parents = [0, 1, 1, 0, 4, 5, 5, 4]
    children = [1, 2, 3, 4, 5, 6, 7, 8]
    assert formula_symbols(tokens, parents, children) == sorted(
        ["k_B", "k", "B", "T_e", "T", "e", "2"]
    )
    assert formula_symbols([], [], []) == []
    assert formula_symbols(["x"], [], []) == ["x"]


def test_edge_lists_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError):
        formula_symbols(["plus", "a", "b"], [0, 0], [1])
