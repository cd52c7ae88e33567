"""OPT → graph arrays: preorder numbering, edges, roles, positions, linearisation, vocabulary."""

import gc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formula_assets.core.settings import Settings
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.syntax import opt
from formula_assets.syntax.mathml import OptNode, ParseOptions, parse_mathml
from formula_assets.syntax.opt import (
    BATCH_ROWS,
    EXCERPT_CHARS,
    OPT_GRAPH_SCHEMA,
    REJECTED_SCHEMA,
    OptGraph,
    build_opt_graphs,
    flatten,
    is_tree,
    linearise,
)

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


# ---- flatten: empty graph, chains, and a recursive oracle ----------------------------------


def test_an_empty_graph_has_no_nodes_and_depth_zero() -> None:
    graph = OptGraph()
    assert (graph.num_nodes, graph.depth, graph.linearised) == (0, 0, "")
    assert linearise(["a", "+", "b"]) == "a + b"
    assert linearise([]) == ""


def test_depth_counts_edges_on_the_longest_path() -> None:
    leaf = OptNode("symbol", "x")
    chain = OptNode("function", "f", [OptNode("function", "g", [leaf], "arg", 0)])
    graph = flatten(chain)
    assert graph.depth == 2
    assert graph.node_tokens == ["f", "g", "x"]
    assert (graph.edge_parent, graph.edge_child) == ([0, 1], [1, 2])
    assert flatten(OptNode("symbol", "y")).depth == 0


@st.composite
def opt_trees(draw, depth: int = 0) -> OptNode:
    token = draw(st.sampled_from(["x", "+", "f", "2", "group"]))
    kind = draw(st.sampled_from(["symbol", "operator", "function"]))
    n = 0 if depth >= 4 else draw(st.integers(0, 3))
    children = [draw(opt_trees(depth + 1)) for _ in range(n)]
    for position, child in enumerate(children):
        child.role = draw(st.sampled_from(["arg", "base", "exp", "num"]))
        child.position = position
    return OptNode(kind, token, children)


def preorder(node: OptNode, parent: int, level: int, out: dict) -> None:
    index = len(out["tokens"])
    out["tokens"].append(node.token)
    out["types"].append(node.type)
    out["depth"] = max(out["depth"], level)
    if parent != -1:
        out["edges"].append((parent, index, node.role, node.position))
    for child in node.children:
        preorder(child, index, level + 1, out)


@settings(max_examples=150, deadline=None)
@given(opt_trees())
def test_flatten_is_the_preorder_walk(root: OptNode) -> None:
    expected: dict = {"tokens": [], "types": [], "edges": [], "depth": 0}
    preorder(root, -1, 0, expected)
    graph = flatten(root)
    assert graph.node_tokens == expected["tokens"]
    assert graph.node_types == expected["types"]
    edges = list(
        zip(
            graph.edge_parent,
            graph.edge_child,
            graph.edge_roles,
            graph.child_positions,
            strict=True,
        )
    )
    assert edges == expected["edges"]
    assert graph.depth == expected["depth"]
    assert graph.num_nodes == root.size()
    assert graph.linearised == " ".join(expected["tokens"])
    assert is_tree(graph.num_nodes, graph.edge_parent, graph.edge_child)


# ---- is_tree: the definition, case by case and against an oracle -------------------------


@pytest.mark.parametrize(
    ("nodes", "parents", "children", "expected"),
    [
        (3, [0, 1], [1, 2], True),  # a chain 0 → 1 → 2
        (4, [0, 1, 2], [1, 2, 3], True),  # a longer chain
        (4, [2, 0, 0], [3, 1, 2], True),  # edges in any order
        (2, [0], [1, 1], False),  # lists of different lengths: not an error
        (2, [0, 0], [1], False),
        (2, [2], [1], False),  # parent == node count: out of range
        (2, [-1], [1], False),  # negative parent
        (2, [0], [2], False),  # child == node count: out of range
        (2, [1], [0], False),  # the root has a parent
        (2, [1], [1], False),  # a self loop
        (3, [1, 2], [2, 1], False),  # 1 ↔ 2, detached from the root
        (1, [0], [0], False),  # one node, one edge
    ],
)
def test_is_tree_cases(nodes: int, parents: list[int], children: list[int], expected: bool) -> None:
    assert is_tree(nodes, parents, children) is expected


def arborescence(n: int, parents: list[int], children: list[int]) -> bool:
    """Oracle: rooted at 0, every other node reached exactly once from 0 along edges."""
    if n < 1 or len(parents) != len(children) or len(parents) != n - 1:
        return False
    if not all(0 <= v < n for v in [*parents, *children]):
        return False
    out: dict[int, list[int]] = {}
    for p, c in zip(parents, children, strict=True):
        out.setdefault(p, []).append(c)
    seen, frontier = {0}, [0]
    while frontier:
        node = frontier.pop()
        for c in out.get(node, []):
            if c in seen:
                return False
            seen.add(c)
            frontier.append(c)
    return len(seen) == n


@st.composite
def edge_lists(draw) -> tuple[int, list[int], list[int]]:
    n = draw(st.integers(0, 6))
    if n and draw(st.booleans()):  # a real tree, relabelled, maybe damaged
        order = [0, *draw(st.permutations(range(1, n)))]
        parents = [order[draw(st.integers(0, i - 1))] for i in range(1, n)]
        children = order[1:]
        if draw(st.booleans()) and parents:
            i = draw(st.integers(0, len(parents) - 1))
            which = draw(st.sampled_from(["parent", "child"]))
            value = draw(st.integers(-1, n))
            (parents if which == "parent" else children)[i] = value
        return n, parents, children
    values = st.integers(-1, n + 1)
    parents = draw(st.lists(values, max_size=n + 1))
    children = draw(st.lists(values, min_size=len(parents), max_size=len(parents)))
    return n, parents, children


@settings(max_examples=300, deadline=None)
@given(edge_lists())
def test_is_tree_matches_the_oracle(case: tuple[int, list[int], list[int]]) -> None:
    n, parents, children = case
    assert is_tree(n, parents, children) is arborescence(n, parents, children)


# ---- build_opt_graphs: rows, excerpts, batches, the garbage collector ----------------------


def test_graph_rows_hold_every_column() -> None:
    built = build_opt_graphs([("Q7", ENERGY)])
    (row,) = built.graphs.to_pylist()
    assert row == {
        "qid": "Q7",
        "node_tokens": ["group", "E", "=", "m", "power", "c", "2"],
        "node_types": [
            "function",
            "symbol",
            "operator",
            "symbol",
            "function",
            "symbol",
            "symbol",
        ],
        "edge_parent": [0, 0, 0, 0, 4, 4],
        "edge_child": [1, 2, 3, 4, 5, 6],
        "edge_roles": ["arg", "arg", "arg", "arg", "base", "exp"],
        "child_positions": [0, 1, 2, 3, 0, 1],
        "linearised_opt": "group E = m power c 2",
        "num_nodes": 7,
        "depth": 2,
        "parse_status": "ok",
        "parse_warnings": [],
    }
    assert built.rejected.num_rows == 0
    assert built.reject_rate == 0.0


def test_nothing_to_build_has_a_reject_rate_of_zero() -> None:
    built = build_opt_graphs([])
    assert (built.graphs.num_rows, built.rejected.num_rows) == (0, 0)
    assert built.reject_rate == 0.0
    assert built.graphs.schema == OPT_GRAPH_SCHEMA
    assert built.rejected.schema == REJECTED_SCHEMA


@pytest.mark.parametrize("mathml", [None, "", "   \n\t"])
def test_missing_mathml_is_rejected_with_an_empty_excerpt(mathml: str | None) -> None:
    built = build_opt_graphs([("Q1", mathml)])
    assert built.rejected.to_pylist() == [
        {"qid": "Q1", "stage": "parse", "reason": "no MathML for this item", "excerpt": ""}
    ]
    assert built.reject_rate == 1.0


def excerpt_of(text: str) -> str:
    (row,) = build_opt_graphs([("Q1", text)]).rejected.to_pylist()
    return row["excerpt"]


def test_excerpt_keeps_up_to_200_characters() -> None:
    exact = "<math>" + "a" * 194  # 200 characters, not well-formed
    assert len(exact) == EXCERPT_CHARS == 200
    assert excerpt_of(exact) == exact
    longer = exact + "b"
    assert excerpt_of(longer) == exact[:199] + "…"
    assert len(excerpt_of(longer)) == 200


def test_excerpt_keeps_the_first_100_words_with_single_spaces() -> None:
    words = " ".join(f"w{i % 10}" for i in range(150))  # 3 characters a word
    assert excerpt_of(words) == " ".join(f"w{i % 10}" for i in range(100))[:199] + "…"
    short = "x  " * 150  # 100 words of one letter: 199 characters, kept whole
    assert excerpt_of(short) == " ".join(["x"] * 100)
    assert excerpt_of("<math>\n  <mi>x</mi>\n") == "<math> <mi>x</mi>"


def test_excerpt_replaces_lone_surrogates() -> None:
    assert excerpt_of("\udcff<math") == "?<math"


def test_rows_are_batched_5000_at_a_time() -> None:
    rows = [(f"Q{i}", "<math><mi>x</mi></math>") for i in range(BATCH_ROWS + 1)]
    built = build_opt_graphs(rows)
    assert BATCH_ROWS == 5000
    column = built.graphs.column("qid")
    assert [len(chunk) for chunk in column.chunks] == [5000, 1]
    assert column.to_pylist() == [q for q, _ in rows]


def test_batches_do_not_repeat_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opt, "BATCH_ROWS", 2)
    rows = [(f"Q{i}", f"<math><mn>{i}</mn></math>") for i in range(5)]
    built = build_opt_graphs(rows)
    assert [len(c) for c in built.graphs.column("qid").chunks] == [2, 2, 1]
    assert built.graphs["node_tokens"].to_pylist() == [[str(i)] for i in range(5)]


def test_garbage_collector_is_paused_while_building_and_restored() -> None:
    seen: list[bool] = []

    def rows():
        for i in range(3):
            seen.append(gc.isenabled())
            yield f"Q{i}", "<math><mi>x</mi></math>"

    assert gc.isenabled()
    build_opt_graphs(rows())
    assert seen == [False, False, False]
    assert gc.isenabled()
    gc.disable()
    try:
        build_opt_graphs(rows())
        assert not gc.isenabled()  # a caller's choice is left alone
    finally:
        gc.enable()


def test_garbage_collector_is_restored_when_building_fails() -> None:
    def rows():
        yield "Q1", "<math><mi>x</mi></math>"
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        build_opt_graphs(rows())
    assert gc.isenabled()


# ---- the styled-letter setting ----------------------------------------------------------------

STYLED = '<math><mrow><mi>&#x211D;</mi><mo>=</mo><mi mathvariant="bold">F</mi></mrow></math>'


def test_the_styled_letter_setting_makes_the_parse_options() -> None:
    """The parser takes options; the pipeline makes them from its settings (`parse_options`),
    and the graphs follow them."""
    assert opt.parse_options(Settings.from_environment({}).styled_letters) == ParseOptions()
    folded = opt.parse_options(
        Settings.from_environment({"FORMULA_ASSETS_STYLED_LETTERS": " Fold "}).styled_letters
    )
    assert folded == ParseOptions(styled_letters="fold")
    distinct = build_opt_graphs([("Q1", STYLED)]).graphs.column("node_tokens").to_pylist()
    assert distinct == [["group", "double-struck R", "=", "bold F"]]
    tokens = build_opt_graphs([("Q1", STYLED)], folded).graphs.column("node_tokens").to_pylist()
    assert tokens == [["group", "R", "=", "F"]]


def test_a_bad_styled_letter_setting_names_the_variable() -> None:
    with pytest.raises(ValueError) as raised:
        opt.parse_options(
            Settings.from_environment({"FORMULA_ASSETS_STYLED_LETTERS": "bold"}).styled_letters
        )
    assert str(raised.value) == (
        "FORMULA_ASSETS_STYLED_LETTERS: styled_letters must be one of distinct, fold, keep, "
        "not 'bold'"
    )


def test_the_setting_default_is_the_parser_default() -> None:
    assert Settings.from_environment({}).styled_letters == ParseOptions().styled_letters
    assert ParseOptions().styled_letters == "distinct"
