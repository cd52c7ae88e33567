"""The paper's GINE graph encoder over OPT graphs (§3.1).

h_i⁽⁰⁾ = emb_label(token_i) + emb_type(type_i); e_ij = emb_role(role_ij) + emb_pos(pos_ij);
two GINEConv layers; global mean pooling; a linear projection W_proj.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch_geometric.nn import GINEConv, global_mean_pool

from formula_assets.graphs.batch import MAX_POSITION, NUM_EDGE_ROLES, NUM_NODE_TYPES, GraphArrays


def to_tensors(arrays: GraphArrays, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    def tensor(values: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(values)).to(device)

    return {
        "tokens": tensor(arrays.tokens),
        "types": tensor(arrays.types),
        "edge_index": tensor(arrays.edge_index),
        "edge_role": tensor(arrays.edge_role),
        "edge_position": tensor(arrays.edge_position),
        "batch": tensor(arrays.batch_vector()),
        "num_graphs": torch.tensor(arrays.num_graphs),
    }


class GineEncoder(nn.Module):
    def __init__(
        self,
        vocabulary_size: int,
        hidden: int = 128,
        out_dim: int = 128,
        layers: int = 2,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.token = nn.Embedding(vocabulary_size, hidden, padding_idx=0)
        self.node_type = nn.Embedding(NUM_NODE_TYPES, hidden)
        self.role = nn.Embedding(NUM_EDGE_ROLES, hidden)
        self.position = nn.Embedding(MAX_POSITION + 1, hidden)
        self.convs = nn.ModuleList(
            GINEConv(
                nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden)),
                train_eps=True,
            )
            for _ in range(layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
        self.dropout = nn.Dropout(dropout)
        self.proj = nn.Linear(hidden, out_dim)

    def pool(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Mean-pooled node states after the GINE layers (before W_proj)."""
        h = self.token(batch["tokens"]) + self.node_type(batch["types"])
        e = self.role(batch["edge_role"]) + self.position(batch["edge_position"])
        for conv, norm in zip(self.convs, self.norms, strict=True):
            h = h + self.dropout(torch.relu(norm(conv(h, batch["edge_index"], e))))
        return global_mean_pool(h, batch["batch"], size=int(batch["num_graphs"]))

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.proj(self.pool(batch))
