"""`opt_graphs` rows → integer arrays for a graph neural network, batched without Python loops.

Each OPT edge parent → child is kept with its (role, position) attribute, and mirrored child →
parent with the role's reverse id (`role + len(ROLES)`), so messages flow both up and down
the tree; the GINE layers of the paper then see the whole formula from every node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from formula_assets.graphs.vocabulary import NODE_TYPE_IDS, ROLE_IDS, TokenVocabulary
from formula_assets.syntax.schema import NODE_TYPES, ROLES

MAX_POSITION = 63  # child positions beyond this share one embedding
NUM_EDGE_ROLES = 2 * len(ROLES)
NUM_NODE_TYPES = len(NODE_TYPES)


@dataclass
class GraphArrays:
    """Concatenated graphs: node arrays, edge arrays and the graph each node belongs to."""

    tokens: np.ndarray  # (N,) int64 vocabulary ids
    types: np.ndarray  # (N,) int64 node type ids
    edge_index: np.ndarray  # (2, E) int64, source → target, both directions
    edge_role: np.ndarray  # (E,) int64 role ids; reverse edges offset by len(ROLES)
    edge_position: np.ndarray  # (E,) int64 child position, clipped to MAX_POSITION
    node_offsets: np.ndarray  # (G + 1,) where each graph's nodes start
    edge_offsets: np.ndarray  # (G + 1,) where each graph's edges start
    # (N,) rows of a table of token-text vectors (row 0: no text), when one is used
    text_tokens: np.ndarray | None = None

    @property
    def num_graphs(self) -> int:
        return len(self.node_offsets) - 1

    def batch_vector(self, graphs: Sequence[int] | None = None) -> np.ndarray:
        sizes = np.diff(self.node_offsets) if graphs is None else self.sizes(graphs)
        return np.repeat(np.arange(len(sizes)), sizes)

    def sizes(self, graphs: Sequence[int]) -> np.ndarray:
        index = np.asarray(graphs, dtype=np.int64)  # an empty selection is still an index
        return self.node_offsets[index + 1] - self.node_offsets[index]

    def select(self, graphs: Sequence[int]) -> GraphArrays:
        """A sub-batch of the given graphs, renumbered; vectorised gathers only."""
        index = np.asarray(graphs, dtype=np.int64)
        n_start, n_end = self.node_offsets[index], self.node_offsets[index + 1]
        e_start, e_end = self.edge_offsets[index], self.edge_offsets[index + 1]
        node_take = _ranges(n_start, n_end)
        edge_take = _ranges(e_start, e_end)
        node_sizes, edge_sizes = n_end - n_start, e_end - e_start
        new_node_offsets = np.concatenate(([0], np.cumsum(node_sizes)))
        # Shift each graph's edge endpoints from its old node start to its new one.
        shift = np.repeat(new_node_offsets[:-1] - n_start, edge_sizes)
        return GraphArrays(
            tokens=self.tokens[node_take],
            types=self.types[node_take],
            edge_index=self.edge_index[:, edge_take] + shift,
            edge_role=self.edge_role[edge_take],
            edge_position=self.edge_position[edge_take],
            node_offsets=new_node_offsets,
            edge_offsets=np.concatenate(([0], np.cumsum(edge_sizes))),
            text_tokens=None if self.text_tokens is None else self.text_tokens[node_take],
        )


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, e) for each pair, vectorised."""
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return np.arange(total, dtype=np.int64) + offsets


def graph_arrays(
    graphs: pa.Table,
    vocabulary: TokenVocabulary,
    text_vocabulary: TokenVocabulary | None = None,
) -> GraphArrays:
    """All rows of an `opt_graphs` table as one concatenated set of arrays; with a
    `text_vocabulary`, each node also gets its row in the table of token-text vectors."""
    tokens_lists = graphs.column("node_tokens").to_pylist()
    type_lists = graphs.column("node_types").to_pylist()
    parents_lists = graphs.column("edge_parent").to_pylist()
    children_lists = graphs.column("edge_child").to_pylist()
    role_lists = graphs.column("edge_roles").to_pylist()
    position_lists = graphs.column("child_positions").to_pylist()

    node_sizes = np.fromiter(
        (len(t) for t in tokens_lists), dtype=np.int64, count=len(tokens_lists)
    )
    edge_sizes = np.fromiter(
        (len(p) for p in parents_lists), dtype=np.int64, count=len(parents_lists)
    )
    node_offsets = np.concatenate(([0], np.cumsum(node_sizes)))
    flat_tokens = [t for tokens in tokens_lists for t in tokens]
    tokens = np.asarray(vocabulary.ids(flat_tokens), dtype=np.int64)
    types = np.asarray([NODE_TYPE_IDS[t] for ts in type_lists for t in ts], dtype=np.int64)
    shift = np.repeat(node_offsets[:-1], edge_sizes)
    parents = np.asarray([p for ps in parents_lists for p in ps], dtype=np.int64) + shift
    children = np.asarray([c for cs in children_lists for c in cs], dtype=np.int64) + shift
    roles = np.asarray([ROLE_IDS.get(r, 0) for rs in role_lists for r in rs], dtype=np.int64)
    positions = np.minimum(
        np.asarray([p for ps in position_lists for p in ps], dtype=np.int64), MAX_POSITION
    )
    # Interleave each graph's down edges with its up edges so a graph's edges stay contiguous.
    down = np.stack([parents, children])
    up = np.stack([children, parents])
    order = np.argsort(
        np.concatenate([np.repeat(np.arange(len(edge_sizes)), edge_sizes)] * 2), kind="stable"
    )
    edge_index = np.concatenate([down, up], axis=1)[:, order]
    edge_role = np.concatenate([roles, roles + len(ROLES)])[order]
    edge_position = np.concatenate([positions, positions])[order]
    return GraphArrays(
        tokens=tokens,
        types=types,
        edge_index=edge_index.reshape(2, -1),
        edge_role=edge_role,
        edge_position=edge_position,
        node_offsets=node_offsets,
        edge_offsets=np.concatenate(([0], np.cumsum(2 * edge_sizes))),
        text_tokens=None
        if text_vocabulary is None
        else np.asarray(text_vocabulary.ids(flat_tokens), dtype=np.int64),
    )
