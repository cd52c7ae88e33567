"""OPT → graph rows, linearisation and token counts (paper §3.1, "Graph-based encoder").

Nodes are numbered in preorder, so `node_tokens` is also the linearised OPT and node 0 is the
root. Every edge runs parent → child and carries the child's role and position: the
``edge_attr = (role, pos)`` of the paper.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import pyarrow as pa

from formula_assets.core.settings import STYLED_LETTERS_ENV
from formula_assets.syntax.mathml import MathMLError, OptNode, ParseOptions, parse_mathml_tree

# How styled letters become tokens changes every graph: it enters the code version.
RESULT_SETTINGS = ("styled_letters",)
EXCERPT_CHARS = 200


def parse_options(styled_letters: str) -> ParseOptions:
    """The parse options the pipeline and search use: the defaults, and the styled-letter
    setting (`styled_letters`, FORMULA_ASSETS_STYLED_LETTERS); a bad value names it."""
    try:
        return ParseOptions(styled_letters=styled_letters)
    except ValueError as exc:
        raise ValueError(f"{STYLED_LETTERS_ENV}: {exc}") from None


@dataclass
class OptGraph:
    node_tokens: list[str] = field(default_factory=list)
    node_types: list[str] = field(default_factory=list)
    edge_parent: list[int] = field(default_factory=list)
    edge_child: list[int] = field(default_factory=list)
    edge_roles: list[str] = field(default_factory=list)
    child_positions: list[int] = field(default_factory=list)
    depth: int = 0

    @property
    def num_nodes(self) -> int:
        return len(self.node_tokens)

    @property
    def linearised(self) -> str:
        return linearise(self.node_tokens)


def linearise(node_tokens: Sequence[str]) -> str:
    """The preorder token sequence as text, for BM25 and sentence encoders."""
    return " ".join(node_tokens)


def flatten(root: OptNode) -> OptGraph:
    graph = OptGraph()
    tokens, types = graph.node_tokens, graph.node_types
    parents, children, roles, positions = (
        graph.edge_parent,
        graph.edge_child,
        graph.edge_roles,
        graph.child_positions,
    )
    depth = 0
    stack: list[tuple[OptNode, int, int]] = [(root, -1, 0)]
    while stack:
        node, parent, level = stack.pop()
        index = len(tokens)
        tokens.append(node.token)
        types.append(node.type)
        if parent >= 0:
            parents.append(parent)
            children.append(index)
            roles.append(node.role)
            positions.append(node.position)
        if level > depth:
            depth = level
        for child in reversed(node.children):
            stack.append((child, index, level + 1))
    graph.depth = depth
    return graph


GRAPH_COLUMNS = (
    "node_tokens", "node_types", "edge_parent", "edge_child", "edge_roles", "child_positions",
)  # fmt: skip


def trees(graphs: pa.Table) -> Iterator[tuple[str, OptNode]]:
    """Each formula of `opt_graphs` as its item's qid and OPT (a row without nodes, a
    formula that did not parse, is skipped)."""
    data = {name: graphs.column(name).to_pylist() for name in ("qid", *GRAPH_COLUMNS)}
    for i, qid in enumerate(data["qid"]):
        if data["node_tokens"][i]:
            yield qid, unflatten(*(data[c][i] for c in GRAPH_COLUMNS))


def unflatten(
    node_tokens: Sequence[str],
    node_types: Sequence[str],
    edge_parent: Sequence[int],
    edge_child: Sequence[int],
    edge_roles: Sequence[str],
    child_positions: Sequence[int],
) -> OptNode:
    """The tree `flatten` made these rows of (nodes in preorder): read back from `opt_graphs`
    without parsing the MathML again."""
    nodes = [OptNode(t, token) for token, t in zip(node_tokens, node_types, strict=True)]
    for parent, child, role, position in zip(
        edge_parent, edge_child, edge_roles, child_positions, strict=True
    ):
        node = nodes[child]
        node.role, node.position = role, position
        nodes[parent].children.append(node)
    return nodes[0]


def is_tree(node_count: int, edge_parent: Sequence[int], edge_child: Sequence[int]) -> bool:
    """Edges = nodes − 1, every node but the root has exactly one parent, all reach the root."""
    if node_count == 0 or len(edge_parent) != node_count - 1 or len(edge_child) != len(edge_parent):
        return False
    parent_of = [-1] * node_count
    for p, c in zip(edge_parent, edge_child, strict=True):
        if not (0 <= p < node_count and 0 < c < node_count) or parent_of[c] != -1 or p == c:
            return False
        parent_of[c] = p
    roots = [i for i, p in enumerate(parent_of) if p == -1]
    if roots != [0]:
        return False
    for start in range(node_count):  # no cycles: every walk up ends at the root
        seen = 0
        node = start
        while node != 0:
            node = parent_of[node]
            seen += 1
            if seen > node_count:
                return False
    return True


OPT_GRAPH_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("node_tokens", pa.list_(pa.string())),
        ("node_types", pa.list_(pa.string())),
        ("edge_parent", pa.list_(pa.int32())),
        ("edge_child", pa.list_(pa.int32())),
        ("edge_roles", pa.list_(pa.string())),
        ("child_positions", pa.list_(pa.int32())),
        ("linearised_opt", pa.string()),
        ("num_nodes", pa.int32()),
        ("depth", pa.int32()),
        ("parse_status", pa.string()),
        ("parse_warnings", pa.list_(pa.string())),
    ]
)

REJECTED_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("excerpt", pa.string()),
    ]
)


@dataclass
class OptBuild:
    graphs: pa.Table
    rejected: pa.Table

    @property
    def reject_rate(self) -> float:
        total = self.graphs.num_rows + self.rejected.num_rows
        return self.rejected.num_rows / total if total else 0.0


def _excerpt(text: str | None) -> str:
    if not text:
        return ""
    text = " ".join(text.split()[:100])
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates → "?"
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


@contextmanager
def _gc_paused() -> Iterator[None]:
    """OPT trees are acyclic: reference counting frees them, the cycle collector only costs time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_opt_graphs(
    formulae: Iterable[tuple[str, str | None]],
    options: ParseOptions | None = None,
) -> OptBuild:
    """Parse (qid, MathML) pairs; failures become rejected rows and the rest go on.

    Without `options`, the parser's defaults (the pipeline passes `parse_options` of its
    settings).
    """
    with _gc_paused():
        return _build_opt_graphs(formulae, options or ParseOptions())


# Rows are turned into Arrow batches this many at a time: Python lists of tokens cost far
# more memory than Arrow's columns, so the peak stays bounded whatever the corpus size.
BATCH_ROWS = 5000


def _build_opt_graphs(
    formulae: Iterable[tuple[str, str | None]], options: ParseOptions
) -> OptBuild:
    graphs: dict[str, list] = {name: [] for name in OPT_GRAPH_SCHEMA.names}
    rejected: dict[str, list] = {name: [] for name in REJECTED_SCHEMA.names}
    batches: list[pa.RecordBatch] = []

    def flush() -> None:
        if graphs["qid"]:
            batches.append(pa.RecordBatch.from_pydict(graphs, schema=OPT_GRAPH_SCHEMA))
            for column in graphs.values():
                column.clear()

    def reject(qid: str, stage: str, reason: str, text: str | None) -> None:
        rejected["qid"].append(qid)
        rejected["stage"].append(stage)
        rejected["reason"].append(reason)
        rejected["excerpt"].append(_excerpt(text))

    for qid, mathml in formulae:
        if not mathml or not mathml.strip():
            reject(qid, "parse", "no MathML for this item", mathml)
            continue
        try:
            tree = parse_mathml_tree(mathml, options)
        except MathMLError as exc:
            reject(qid, "parse", exc.reason, mathml)
            continue
        graph = flatten(tree.root)
        graphs["qid"].append(qid)
        graphs["node_tokens"].append(graph.node_tokens)
        graphs["node_types"].append(graph.node_types)
        graphs["edge_parent"].append(graph.edge_parent)
        graphs["edge_child"].append(graph.edge_child)
        graphs["edge_roles"].append(graph.edge_roles)
        graphs["child_positions"].append(graph.child_positions)
        graphs["linearised_opt"].append(graph.linearised)
        graphs["num_nodes"].append(graph.num_nodes)
        graphs["depth"].append(graph.depth)
        graphs["parse_status"].append("repaired" if tree.warnings else "ok")
        graphs["parse_warnings"].append(tree.warnings)
        if len(graphs["qid"]) >= BATCH_ROWS:
            flush()
    flush()
    return OptBuild(
        pa.Table.from_batches(batches, schema=OPT_GRAPH_SCHEMA),
        pa.Table.from_pydict(rejected, schema=REJECTED_SCHEMA),
    )
