"""The paper's GINE graph encoder over OPT graphs (§3.1).

h_i⁽⁰⁾ = emb_label(token_i) + emb_type(type_i); e_ij = emb_role(role_ij) + emb_pos(pos_ij);
two GINE layers; global mean pooling; a linear projection W_proj. Optional inputs (profile
settings, each measured in docs/research-record.md): the sentence vector of each node's
token text, and a formula context — the sentence vector of the whole linearised OPT, projected
and added to every node's initial state, so message passing starts from what the formula says
as a whole as well as from its symbols. The `mean+formula` readout also reads the formula
context through an MLP head beside the pooled nodes, so the graph model can do all that a
head over the sentence vector alone does (`sbert_dual_cl`) and add the structure to it.

The GINE layer (Hu et al., 2020) is written here in plain torch: it is a dozen lines, and
PyTorch Geometric's import (which pulls in `torch._dynamo`) cost several seconds in every
process that encodes a formula, a search query included.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from formula_assets.graphs.batch import MAX_POSITION, NUM_EDGE_ROLES, NUM_NODE_TYPES, GraphArrays

READOUTS = ("mean", "mean+formula")
UNK_ID = 1  # TokenVocabulary: 0 padding, 1 unknown
# the formula head of `mean+formula`: as wide, and as dropped, as sbert_dual_cl's heads
HEAD_HIDDEN = 1024
HEAD_DROPOUT = 0.3


def to_tensors(
    arrays: GraphArrays,
    device: torch.device | str = "cpu",
    text_table: np.ndarray | None = None,
    formula_vectors: np.ndarray | None = None,
) -> dict[str, torch.Tensor]:
    """Tensors of a batch; with `text_table`, the batch's distinct token-text vectors as
    `text` and each node's row of them as `text_index`; with `formula_vectors` (one row per
    graph), the formula context as `formula`."""

    def tensor(values: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(values)).to(device)

    batch = {
        "tokens": tensor(arrays.tokens),
        "types": tensor(arrays.types),
        "edge_index": tensor(arrays.edge_index),
        "edge_role": tensor(arrays.edge_role),
        "edge_position": tensor(arrays.edge_position),
        "batch": tensor(arrays.batch_vector()),
        "num_graphs": torch.tensor(arrays.num_graphs),
    }
    if text_table is not None:
        if arrays.text_tokens is None:
            raise ValueError("a text table needs arrays built with a text vocabulary")
        # each distinct token text once (a batch repeats few of them many times), and per
        # node its row: the text projection runs over the distinct texts, not the nodes
        distinct, per_node = np.unique(arrays.text_tokens, return_inverse=True)
        batch["text"] = tensor(text_table[distinct].astype(np.float32, copy=False))
        batch["text_index"] = tensor(per_node.reshape(-1).astype(np.int64, copy=False))
    if formula_vectors is not None:
        if len(formula_vectors) != arrays.num_graphs:
            raise ValueError(
                f"{len(formula_vectors)} formula vectors for {arrays.num_graphs} graphs"
            )
        batch["formula"] = tensor(formula_vectors.astype(np.float32, copy=False))
    return batch


class GineLayer(nn.Module):
    """h_i' = MLP((1 + ε) h_i + Σ_{j→i} ReLU(h_j + e_ji)), ε trained."""

    def __init__(self, mlp: nn.Module) -> None:
        super().__init__()
        self.nn = mlp
        self.eps = nn.Parameter(torch.zeros(1))

    def forward(self, h: torch.Tensor, edge_index: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        source, target = edge_index[0], edge_index[1]
        messages = torch.relu(h[source] + e)
        summed = torch.zeros_like(h).index_add_(0, target, messages)
        return self.nn((1 + self.eps) * h + summed)


def mean_pool(h: torch.Tensor, graph: torch.Tensor, num_graphs: int) -> torch.Tensor:
    """The mean node state of each graph (an empty graph gives zeros)."""
    sums = h.new_zeros((num_graphs, h.shape[1])).index_add_(0, graph, h)
    counts = h.new_zeros(num_graphs).index_add_(0, graph, torch.ones_like(graph, dtype=h.dtype))
    return sums / counts.clamp(min=1).unsqueeze(1)


class GineEncoder(nn.Module):
    def __init__(
        self,
        vocabulary_size: int,
        hidden: int = 128,
        out_dim: int = 128,
        layers: int = 2,
        dropout: float = 0.0,
        text_dim: int = 0,
        readout: str = "mean",
        token_dropout: float = 0.0,
        formula_dim: int = 0,
        head_hidden: int = HEAD_HIDDEN,
        head_dropout: float = HEAD_DROPOUT,
    ) -> None:
        """`head_hidden`, `head_dropout`: the formula head's (readout `mean+formula`)."""
        super().__init__()
        if readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")
        if readout == "mean+formula" and not formula_dim:
            raise ValueError("the mean+formula readout reads the formula context: set formula_dim")
        self.readout = readout
        self.token_dropout = token_dropout
        self.token = nn.Embedding(vocabulary_size, hidden, padding_idx=0)
        self.text = nn.Linear(text_dim, hidden) if text_dim else None
        self.formula = nn.Linear(formula_dim, hidden) if formula_dim else None
        self.node_type = nn.Embedding(NUM_NODE_TYPES, hidden)
        self.role = nn.Embedding(NUM_EDGE_ROLES, hidden)
        self.position = nn.Embedding(MAX_POSITION + 1, hidden)
        self.convs = nn.ModuleList(
            GineLayer(
                nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
            )
            for _ in range(layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.dropout = nn.Dropout(dropout)
        self.formula_head = (
            nn.Sequential(
                nn.Linear(formula_dim, head_hidden),
                nn.ReLU(),
                nn.Dropout(head_dropout),
                nn.Linear(head_hidden, hidden),
            )
            if readout == "mean+formula"
            else None
        )
        self.proj = nn.Linear(hidden * (1 if readout == "mean" else 2), out_dim)

    def _tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        """In training, a share of known tokens is replaced by UNK, so that UNK is learned
        for the tokens only test formulae have."""
        if not (self.training and self.token_dropout > 0):
            return tokens
        drop = torch.rand(tokens.shape, device=tokens.device) < self.token_dropout
        return torch.where(drop & (tokens > UNK_ID), torch.full_like(tokens, UNK_ID), tokens)

    def pool(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Graph vectors after the GINE layers (before W_proj): the mean of the node states,
        and with `mean+formula` also the formula head's reading of the formula context."""
        h = self.token(self._tokens(batch["tokens"])) + self.node_type(batch["types"])
        if self.text is not None:
            h = h + self.text(batch["text"])[batch["text_index"]]
        if self.formula is not None:
            if "formula" not in batch:
                raise ValueError("this encoder reads a formula context: pass formula_vectors")
            formula = nn.functional.normalize(batch["formula"], dim=-1)
            h = h + self.formula(formula)[batch["batch"]]
        e = self.role(batch["edge_role"]) + self.position(batch["edge_position"])
        for conv, norm in zip(self.convs, self.norms, strict=True):
            h = h + self.dropout(torch.relu(norm(conv(h, batch["edge_index"], e))))
        mean = mean_pool(h, batch["batch"], int(batch["num_graphs"]))
        if self.formula_head is not None:
            return torch.cat([mean, self.formula_head(formula)], dim=1)
        return mean

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.proj(self.pool(batch))
