"""Training-free structural vectors of OPT graphs, by method.

* `wl_svd` (default): Weisfeiler–Lehman subtree features, TF-IDF and SVD (`syntax.wl_svd`);
* `random_gine`: the paper's GINE encoder with fixed-seed, untrained weights: the "native"
  graph space before any alignment is learned.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from formula_assets.graphs.batch import graph_arrays
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.syntax.wl_svd import DEFAULT_DIMENSIONS, wl_svd_embeddings

METHODS = ("wl_svd", "random_gine")


def random_gine_embeddings(
    graphs: pa.Table, dimensions: int = DEFAULT_DIMENSIONS, seed: int = 0, hidden: int = 128
) -> np.ndarray:
    import torch

    from formula_assets.graphs.encoder import GineEncoder, to_tensors

    vocabulary = TokenVocabulary.build(graphs.column("node_tokens").to_pylist())
    arrays = graph_arrays(graphs, vocabulary)
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        encoder = GineEncoder(len(vocabulary), hidden=hidden, out_dim=dimensions).eval()
    finally:
        torch.random.set_rng_state(generator_state)
    outputs = []
    with torch.no_grad():
        for start in range(0, arrays.num_graphs, 512):
            part = arrays.select(range(start, min(start + 512, arrays.num_graphs)))
            outputs.append(encoder(to_tensors(part)).numpy())
    return np.concatenate(outputs).astype(np.float32) if outputs else np.zeros((0, dimensions))


def structural_embeddings(
    graphs: pa.Table,
    method: str = "wl_svd",
    dimensions: int = DEFAULT_DIMENSIONS,
    seed: int = 0,
) -> np.ndarray:
    if method == "wl_svd":
        return wl_svd_embeddings(graphs, dimensions, seed=seed)
    if method == "random_gine":
        return random_gine_embeddings(graphs, dimensions, seed=seed)
    raise ValueError(f"structural method must be one of {METHODS}, got {method!r}")
