"""Training-free structural embeddings: WL subtree features + SVD, and the random GINE."""

import numpy as np
import pytest

from formula_assets.graphs.structural import structural_embeddings
from formula_assets.syntax.opt import build_opt_graphs
from formula_assets.syntax.structural import wl_labels

FORMULAE = {
    "Q1": "<math><mfrac><mi>a</mi><mi>b</mi></mfrac></math>",
    "Q2": "<math><mfrac><mi>b</mi><mi>a</mi></mfrac></math>",
    "Q3": "<math><mrow><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><mn>1</mn></mrow></math>",
    "Q4": "<math><mrow><msup><mi>y</mi><mn>2</mn></msup><mo>+</mo><mn>1</mn></mrow></math>",
    "Q5": "<math><msqrt><mi>x</mi></msqrt></math>",
    "Q6": "<math><mfrac><mi>a</mi><mi>b</mi></mfrac></math>",
}


def graphs():
    return build_opt_graphs(FORMULAE.items()).graphs


def test_wl_labels_see_order_and_roles() -> None:
    rows = graphs().to_pylist()

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


@pytest.mark.parametrize("method", ["wl_svd", "random_gine"])
def test_deterministic_finite_and_structure_aware(method: str) -> None:
    first = structural_embeddings(graphs(), method, dimensions=4, seed=0)
    again = structural_embeddings(graphs(), method, dimensions=4, seed=0)
    assert first.shape == (6, 4) and first.dtype == np.float32
    assert np.isfinite(first).all()
    assert np.array_equal(first, again)
    assert np.allclose(first[0], first[5])  # identical formulae, identical vectors


def test_wl_places_similar_structures_close() -> None:
    vectors = structural_embeddings(graphs(), "wl_svd", dimensions=4)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert unit[2] @ unit[3] > unit[2] @ unit[0]  # x²+1 is nearer y²+1 than a/b


def test_seed_changes_random_gine() -> None:
    a = structural_embeddings(graphs(), "random_gine", dimensions=4, seed=0)
    b = structural_embeddings(graphs(), "random_gine", dimensions=4, seed=1)
    assert not np.allclose(a, b)


def test_unknown_method() -> None:
    with pytest.raises(ValueError, match="wl_svd"):
        structural_embeddings(graphs(), "magic")
