"""`opt_graphs` rows → GNN arrays: hand-computed batches and a loop-by-loop oracle.

The oracle below builds every array the slow, obvious way (one graph, one edge at a time), so
the vectorised code is checked against an independent statement of the layout: nodes of all
graphs concatenated, each graph's down edges (parent → child) followed by its up edges
(child → parent, role id + len(ROLES)), positions clipped to MAX_POSITION.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formula_assets.graphs.batch import (
    MAX_POSITION,
    NUM_EDGE_ROLES,
    NUM_NODE_TYPES,
    GraphArrays,
    _ranges,
    graph_arrays,
)
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.syntax.opt import OPT_GRAPH_SCHEMA
from formula_assets.syntax.schema import NODE_TYPES, ROLES

VOCABULARY = TokenVocabulary.from_tokens(["[PAD]", "[UNK]", "x", "+", "power", "2", "group"])


def table(graphs: list[dict]) -> pa.Table:
    """An `opt_graphs` table holding the given graphs (only the columns batching reads)."""
    rows = []
    for i, g in enumerate(graphs):
        rows.append(
            {
                "qid": f"Q{i}",
                "node_tokens": g["tokens"],
                "node_types": g["types"],
                "edge_parent": [p for p, _ in g["edges"]],
                "edge_child": [c for _, c in g["edges"]],
                "edge_roles": g["roles"],
                "child_positions": g["positions"],
                "linearised_opt": " ".join(g["tokens"]),
                "num_nodes": len(g["tokens"]),
                "depth": 0,
                "parse_status": "ok",
                "parse_warnings": [],
            }
        )
    return pa.Table.from_pylist(rows, schema=OPT_GRAPH_SCHEMA)


# x^2 + x: group(power(x, 2), +, x); and a lone symbol.
POWER = {
    "tokens": ["group", "power", "x", "2", "+", "x"],
    "types": ["function", "function", "symbol", "symbol", "operator", "symbol"],
    "edges": [(0, 1), (1, 2), (1, 3), (0, 4), (0, 5)],
    "roles": ["arg", "base", "exp", "arg", "arg"],
    "positions": [0, 0, 1, 1, 2],
}
LONE = {"tokens": ["y"], "types": ["symbol"], "edges": [], "roles": [], "positions": []}


def test_two_graphs_by_hand() -> None:
    arrays = graph_arrays(table([LONE, POWER]), VOCABULARY)
    arg, base, exp = ROLES.index("arg"), ROLES.index("base"), ROLES.index("exp")
    up = len(ROLES)
    assert arrays.num_graphs == 2
    assert arrays.tokens.tolist() == [1, 6, 4, 2, 5, 3, 2]  # "y" is unknown: [UNK] = 1
    assert arrays.types.tolist() == [0, 2, 2, 0, 0, 1, 0]
    assert arrays.node_offsets.tolist() == [0, 1, 7]
    assert arrays.edge_offsets.tolist() == [0, 0, 10]
    # POWER's nodes start at 1: its down edges, then the same edges reversed.
    assert arrays.edge_index.tolist() == [
        [1, 2, 2, 1, 1, 2, 3, 4, 5, 6],
        [2, 3, 4, 5, 6, 1, 2, 2, 1, 1],
    ]
    assert arrays.edge_role.tolist() == [
        arg,
        base,
        exp,
        arg,
        arg,
        arg + up,
        base + up,
        exp + up,
        arg + up,
        arg + up,
    ]
    assert arrays.edge_position.tolist() == [0, 0, 1, 1, 2] * 2
    assert arrays.batch_vector().tolist() == [0, 1, 1, 1, 1, 1, 1]
    for name in ("tokens", "types", "edge_index", "edge_role", "edge_position"):
        assert getattr(arrays, name).dtype == np.int64, name
    assert arrays.edge_index.shape == (2, 10)


def test_edges_of_each_graph_stay_contiguous_and_in_its_node_range() -> None:
    arrays = graph_arrays(table([POWER, LONE, POWER]), VOCABULARY)
    assert arrays.node_offsets.tolist() == [0, 6, 7, 13]
    assert arrays.edge_offsets.tolist() == [0, 10, 10, 20]
    for g in range(arrays.num_graphs):
        lo, hi = arrays.node_offsets[g], arrays.node_offsets[g + 1]
        edges = arrays.edge_index[:, arrays.edge_offsets[g] : arrays.edge_offsets[g + 1]]
        assert ((edges >= lo) & (edges < hi)).all()
    third = arrays.edge_index[:, 10:20]
    assert third[:, :5].tolist() == [[7, 8, 8, 7, 7], [8, 9, 10, 11, 12]]


def test_positions_are_clipped_and_unknown_roles_embed_as_arg() -> None:
    graph = {
        "tokens": ["group", "x", "x", "x"],
        "types": ["function", "symbol", "symbol", "symbol"],
        "edges": [(0, 1), (0, 2), (0, 3)],
        "roles": ["arg", "no-such-role", "presup"],
        "positions": [MAX_POSITION - 1, MAX_POSITION, MAX_POSITION + 1],
    }
    arrays = graph_arrays(table([graph]), VOCABULARY)
    assert MAX_POSITION == 63
    assert arrays.edge_position.tolist() == [62, 63, 63, 62, 63, 63]
    last = len(ROLES) - 1  # presup
    assert arrays.edge_role.tolist() == [0, 0, last, len(ROLES), len(ROLES), 2 * len(ROLES) - 1]


def test_embedding_table_sizes_cover_every_id_exactly() -> None:
    """The encoder sizes its role and type embeddings by these: the largest id must fit."""
    assert NUM_EDGE_ROLES == 30 == 2 * len(ROLES)
    assert NUM_NODE_TYPES == 3 == len(NODE_TYPES)
    graph = {
        "tokens": ["f", "x"],
        "types": ["function", "symbol"],
        "edges": [(0, 1)],
        "roles": [ROLES[-1]],
        "positions": [0],
    }
    arrays = graph_arrays(table([graph]), VOCABULARY)
    assert arrays.edge_role.max() == NUM_EDGE_ROLES - 1
    assert arrays.types.max() == NUM_NODE_TYPES - 1


def test_empty_table() -> None:
    arrays = graph_arrays(table([]), VOCABULARY)
    assert arrays.num_graphs == 0
    assert arrays.node_offsets.tolist() == [0]
    assert arrays.edge_offsets.tolist() == [0]
    assert arrays.edge_index.shape == (2, 0)
    assert arrays.tokens.shape == (0,)
    assert arrays.batch_vector().tolist() == []


def test_select_renumbers_by_hand() -> None:
    arrays = graph_arrays(table([POWER, LONE, POWER]), VOCABULARY)
    part = arrays.select([1, 2])
    assert part.num_graphs == 2
    assert part.node_offsets.tolist() == [0, 1, 7]
    assert part.edge_offsets.tolist() == [0, 0, 10]
    assert part.tokens.tolist() == [1, 6, 4, 2, 5, 3, 2]
    expected = graph_arrays(table([LONE, POWER]), VOCABULARY)
    assert_same(part, expected)
    assert arrays.batch_vector([2, 1]).tolist() == [0, 0, 0, 0, 0, 0, 1]
    assert arrays.sizes([2, 1, 0]).tolist() == [6, 1, 6]


def test_select_nothing_and_only_edgeless_graphs() -> None:
    arrays = graph_arrays(table([LONE, POWER, LONE]), VOCABULARY)
    none = arrays.select([])
    assert none.num_graphs == 0
    assert none.tokens.tolist() == []
    assert none.edge_index.shape == (2, 0)
    # An empty selection is a valid index (it used to be a float array and raise IndexError).
    assert arrays.sizes([]).tolist() == []
    assert arrays.batch_vector([]).tolist() == []
    lone = arrays.select([2, 0])
    assert lone.tokens.tolist() == [1, 1]
    assert lone.node_offsets.tolist() == [0, 1, 2]
    assert lone.edge_offsets.tolist() == [0, 0, 0]
    assert lone.edge_index.shape == (2, 0)
    assert lone.edge_role.tolist() == [] and lone.edge_position.tolist() == []


@pytest.mark.parametrize(
    ("starts", "ends", "expected"),
    [
        ([], [], []),
        ([3], [3], []),
        ([0], [4], [0, 1, 2, 3]),
        ([3], [4], [3]),  # a single index in all
        ([2, 8], [2, 9], [8]),
        ([5, 1, 9], [7, 1, 12], [5, 6, 9, 10, 11]),
        ([4, 0, 2, 2], [6, 3, 3, 2], [4, 5, 0, 1, 2, 2]),
    ],
)
def test_ranges(starts: list[int], ends: list[int], expected: list[int]) -> None:
    got = _ranges(np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64))
    assert got.tolist() == expected
    assert got.dtype == np.int64


# ---- property: the vectorised code equals a loop-by-loop oracle ----------------------------

TOKENS = ["x", "+", "power", "2", "group", "unseen", "z"]


@st.composite
def graphs(draw) -> dict:
    n = draw(st.integers(1, 8))
    # A random tree: node i > 0 hangs under some earlier node (preorder-like numbering).
    parents = [draw(st.integers(0, i - 1)) for i in range(1, n)]
    return {
        "tokens": draw(st.lists(st.sampled_from(TOKENS), min_size=n, max_size=n)),
        "types": draw(st.lists(st.sampled_from(NODE_TYPES), min_size=n, max_size=n)),
        "edges": [(p, c) for c, p in enumerate(parents, start=1)],
        "roles": draw(st.lists(st.sampled_from([*ROLES, "odd"]), min_size=n - 1, max_size=n - 1)),
        "positions": draw(st.lists(st.integers(0, 80), min_size=n - 1, max_size=n - 1)),
    }


def oracle(gs: list[dict]) -> dict[str, list]:
    vocab = {t: i for i, t in enumerate(VOCABULARY.tokens)}
    out: dict[str, list] = {k: [] for k in ("tokens", "types", "src", "dst", "role", "pos")}
    node_offsets, edge_offsets = [0], [0]
    for g in gs:
        base = node_offsets[-1]
        out["tokens"] += [vocab.get(t, 1) for t in g["tokens"]]
        out["types"] += [NODE_TYPES.index(t) for t in g["types"]]
        role_ids = [ROLES.index(r) if r in ROLES else 0 for r in g["roles"]]
        positions = [min(p, 63) for p in g["positions"]]
        for (p, c), r, pos in zip(g["edges"], role_ids, positions, strict=True):
            out["src"].append(base + p)
            out["dst"].append(base + c)
            out["role"].append(r)
            out["pos"].append(pos)
        for (p, c), r, pos in zip(g["edges"], role_ids, positions, strict=True):
            out["src"].append(base + c)
            out["dst"].append(base + p)
            out["role"].append(r + len(ROLES))
            out["pos"].append(pos)
        node_offsets.append(base + len(g["tokens"]))
        edge_offsets.append(edge_offsets[-1] + 2 * len(g["edges"]))
    out["node_offsets"], out["edge_offsets"] = node_offsets, edge_offsets
    out["batch"] = [g for g in range(len(gs)) for _ in gs[g]["tokens"]]
    return out


def assert_matches(arrays: GraphArrays, expected: dict[str, list]) -> None:
    assert arrays.tokens.tolist() == expected["tokens"]
    assert arrays.types.tolist() == expected["types"]
    assert arrays.edge_index.shape == (2, len(expected["src"]))
    assert arrays.edge_index[0].tolist() == expected["src"]
    assert arrays.edge_index[1].tolist() == expected["dst"]
    assert arrays.edge_role.tolist() == expected["role"]
    assert arrays.edge_position.tolist() == expected["pos"]
    assert arrays.node_offsets.tolist() == expected["node_offsets"]
    assert arrays.edge_offsets.tolist() == expected["edge_offsets"]
    assert arrays.num_graphs == len(expected["node_offsets"]) - 1
    assert arrays.batch_vector().tolist() == expected["batch"]


def assert_same(a: GraphArrays, b: GraphArrays) -> None:
    for name in (
        "tokens",
        "types",
        "edge_index",
        "edge_role",
        "edge_position",
        "node_offsets",
        "edge_offsets",
    ):
        assert getattr(a, name).tolist() == getattr(b, name).tolist(), name
        assert getattr(a, name).shape == getattr(b, name).shape, name


@settings(max_examples=60, deadline=None)
@given(st.lists(graphs(), max_size=6))
def test_graph_arrays_match_the_oracle(gs: list[dict]) -> None:
    assert_matches(graph_arrays(table(gs), VOCABULARY), oracle(gs))


@settings(max_examples=60, deadline=None)
@given(st.lists(graphs(), min_size=1, max_size=6), st.data())
def test_select_equals_batching_the_selected_graphs(gs: list[dict], data) -> None:
    picks = data.draw(st.lists(st.integers(0, len(gs) - 1), max_size=8))
    arrays = graph_arrays(table(gs), VOCABULARY)
    part = arrays.select(picks)
    chosen = [gs[i] for i in picks]
    assert_matches(part, oracle(chosen))
    assert arrays.batch_vector(picks).tolist() == oracle(chosen)["batch"]
    assert arrays.sizes(picks).tolist() == [len(g["tokens"]) for g in chosen]


TEXT = TokenVocabulary.from_tokens(["[PAD]", "[UNK]", "+", "2", "group", "power", "x", "y"])


def test_text_rows_follow_every_node_through_selection() -> None:
    plain = graph_arrays(table([LONE, POWER]), VOCABULARY)
    assert plain.text_tokens is None and plain.select([1]).text_tokens is None
    arrays = graph_arrays(table([LONE, POWER]), VOCABULARY, TEXT)
    # "y" is unknown to the training vocabulary but has a text row
    assert arrays.text_tokens.tolist() == [7, 4, 5, 6, 3, 2, 6]
    assert arrays.text_tokens.dtype == np.int64
    assert arrays.select([1]).text_tokens.tolist() == [4, 5, 6, 3, 2, 6]
    assert arrays.select([1, 0, 1]).text_tokens.tolist() == [4, 5, 6, 3, 2, 6, 7, 4, 5, 6, 3, 2, 6]
    assert arrays.select([]).text_tokens.tolist() == []
