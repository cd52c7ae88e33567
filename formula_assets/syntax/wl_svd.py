"""Training-free structural embeddings of OPT graphs: Weisfeiler–Lehman subtree features.

`wl_svd` (the default method): subtree features. Each node starts with its type and
token; each round relabels a node by its label and the ordered (role, label) sequence of its
children, so after h rounds a label names the node's whole rooted subtree of depth h — the
patterns formula retrieval systems match on (shared sub-expressions like `frac(1, 2)` or
`power(x, 2)`). The bag of labels of all rounds is hashed into a sparse vector (no vocabulary
to grow), weighted by sublinear TF-IDF so ubiquitous patterns (`=`, parentheses) count less,
and reduced by TruncatedSVD (latent semantic analysis) to a dense space. Deterministic: labels
are hashed with BLAKE2b and the SVD uses a fixed seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

DEFAULT_DIMENSIONS = 64
DEFAULT_ITERATIONS = 3
HASH_FEATURES = 1 << 20


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def wl_labels(
    tokens: Sequence[str],
    types: Sequence[str],
    parents: Sequence[int],
    children: Sequence[int],
    roles: Sequence[str],
    iterations: int = DEFAULT_ITERATIONS,
) -> list[str]:
    """Every node's WL label in every round 0..iterations, prefixed by the round."""
    n = len(tokens)
    kids: list[list[tuple[str, int]]] = [[] for _ in range(n)]
    for p, c, r in zip(parents, children, roles, strict=True):
        kids[p].append((r, c))  # edges are stored in child order
    labels = [f"{t}:{tok}" for t, tok in zip(types, tokens, strict=True)]
    out = [f"0|{label}" for label in labels]
    for round_ in range(1, iterations + 1):
        labels = [
            _digest(labels[v] + "(" + ",".join(f"{r}={labels[c]}" for r, c in kids[v]) + ")")
            if kids[v]
            else labels[v]
            for v in range(n)
        ]
        out += [f"{round_}|{label}" for v, label in enumerate(labels) if kids[v]]
    return out


def wl_svd_embeddings(
    graphs: pa.Table,
    dimensions: int = DEFAULT_DIMENSIONS,
    iterations: int = DEFAULT_ITERATIONS,
    seed: int = 0,
) -> np.ndarray:
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction import FeatureHasher
    from sklearn.feature_extraction.text import TfidfTransformer

    documents = [
        wl_labels(t, ty, p, c, r, iterations)
        for t, ty, p, c, r in zip(
            graphs.column("node_tokens").to_pylist(),
            graphs.column("node_types").to_pylist(),
            graphs.column("edge_parent").to_pylist(),
            graphs.column("edge_child").to_pylist(),
            graphs.column("edge_roles").to_pylist(),
            strict=True,
        )
    ]
    hashed = FeatureHasher(
        n_features=HASH_FEATURES, input_type="string", alternate_sign=False
    ).transform(documents)
    hashed = hashed[:, np.unique(hashed.indices)]  # only the buckets some graph uses
    weighted = TfidfTransformer(sublinear_tf=True).fit_transform(hashed)
    components = max(1, min(dimensions, weighted.shape[0] - 1, weighted.shape[1] - 1))
    svd = TruncatedSVD(n_components=components, algorithm="randomized", n_iter=7, random_state=seed)
    reduced = svd.fit_transform(weighted)
    if components < dimensions:  # tiny inputs: keep the promised width
        reduced = np.pad(reduced, ((0, 0), (0, dimensions - components)))
    return reduced.astype(np.float32)
