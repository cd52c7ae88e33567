"""Weisfeiler–Lehman subtree features + SVD: the default training-free structural vectors."""

import numpy as np

from formula_assets.syntax.wl_svd import wl_labels, wl_svd_embeddings
from formula_assets_tests.support.formulae import shape_graphs


def test_wl_labels_see_order_and_roles() -> None:
    rows = shape_graphs().to_pylist()

    def labels(row):
        return wl_labels(
            row["node_tokens"],
            row["node_types"],
            row["edge_parent"],
            row["edge_child"],
            row["edge_roles"],
            iterations=1,
        )

    a_over_b, b_over_a = labels(rows[0]), labels(rows[1])
    assert sorted(a_over_b[:3]) == sorted(b_over_a[:3])  # same tokens at round 0
    assert a_over_b[3:] != b_over_a[3:]  # but a different subtree at round 1
    assert labels(rows[0]) == labels(rows[5])


def test_wl_places_similar_structures_close() -> None:
    vectors = wl_svd_embeddings(shape_graphs(), dimensions=4)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert unit[2] @ unit[3] > unit[2] @ unit[0]  # x²+1 is nearer y²+1 than a/b
