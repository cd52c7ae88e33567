"""OPT → graph arrays: preorder numbering, edges, roles, positions, linearisation, vocabulary."""

import pytest

from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.syntax.mathml import parse_mathml
from formula_assets.syntax.opt import build_opt_graphs, flatten, is_tree

NEWTON = (
    '<math xmlns="http://www.w3.org/1998/Math/MathML"><mrow><mi>F</mi><mo>=</mo>'
    "<mi>m</mi><mo>&#x22C5;</mo><mi>a</mi></mrow></math>"
)
ENERGY = "<math><mrow><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></mrow></math>"


def test_flatten_numbers_nodes_in_preorder() -> None:
    graph = flatten(parse_mathml(ENERGY))
    assert graph.node_tokens == ["group", "E", "=", "m", "power", "c", "2"]
    assert graph.node_types == [
        "function",
        "symbol",
        "operator",
        "symbol",
        "function",
        "symbol",
        "symbol",
    ]
    assert list(zip(graph.edge_parent, graph.edge_child, strict=True)) == [
        (0, 1),
        (0, 2),
        (0, 3),
        (0, 4),
        (4, 5),
        (4, 6),
    ]
    assert graph.edge_roles == ["arg", "arg", "arg", "arg", "base", "exp"]
    assert graph.child_positions == [0, 1, 2, 3, 0, 1]
    assert graph.depth == 2
    assert graph.linearised == "group E = m power c 2"


def test_single_node_graph() -> None:
    graph = flatten(parse_mathml("<math><mi>x</mi></math>"))
    assert (graph.node_tokens, graph.edge_parent, graph.depth) == (["x"], [], 0)
    assert is_tree(1, [], [])


@pytest.mark.parametrize(
    ("nodes", "parents", "children", "expected"),
    [
        (3, [0, 0], [1, 2], True),
        (3, [0], [1], False),  # too few edges
        (3, [0, 1, 2], [1, 2, 0], False),  # too many edges
        (3, [0, 0], [1, 1], False),  # two parents for node 1, node 2 unreachable
        (3, [2, 1], [1, 2], False),  # cycle 1 ↔ 2 detached from the root
        (2, [0], [5], False),  # edge out of range
        (0, [], [], False),
    ],
)
def test_is_tree(nodes: int, parents: list[int], children: list[int], expected: bool) -> None:
    assert is_tree(nodes, parents, children) is expected


def test_build_quarantines_failures_and_goes_on() -> None:
    built = build_opt_graphs(
        [
            ("Q1", NEWTON),
            ("Q2", "<math><merror><mtext>bad</mtext></merror></math>"),
            ("Q3", None),
            ("Q4", ENERGY),
            ("Q5", "<math><msup><mi>x</mi></msup></math>"),
        ]
    )
    graphs = built.graphs.to_pylist()
    assert [g["qid"] for g in graphs] == ["Q1", "Q4", "Q5"]
    assert graphs[0]["linearised_opt"] == "group F = m ⋅ a"
    assert [g["parse_status"] for g in graphs] == ["ok", "ok", "repaired"]
    assert graphs[2]["parse_warnings"] == ["<msup> has 1 children, expected 2; repaired"]
    rejected = built.rejected.to_pylist()
    assert [(r["qid"], r["stage"]) for r in rejected] == [("Q2", "parse"), ("Q3", "parse")]
    assert "did not render" in rejected[0]["reason"]
    assert rejected[0]["excerpt"].startswith("<math><merror>")
    assert rejected[1]["reason"] == "no MathML for this item"
    assert built.reject_rate == pytest.approx(2 / 5)


def test_vocabulary_orders_by_frequency_and_maps_unknowns() -> None:
    vocabulary = TokenVocabulary.build([["x", "+", "x"], ["y", "x", "+"]])
    assert vocabulary.tokens == ("[PAD]", "[UNK]", "x", "+", "y")
    assert vocabulary.ids(["x", "y", "never-seen"]) == [2, 4, 1]
    assert vocabulary.most_common(2) == [("x", 3), ("+", 2)]
    assert len(TokenVocabulary.build([["a", "b", "b"]], min_count=2)) == 3
