"""Training-free structural vectors by method: WL subtree features + SVD, and the random GINE."""

import numpy as np
import pytest

from formula_assets.graphs.training_free import structural_embeddings
from formula_assets_tests.support.formulae import shape_graphs


@pytest.mark.parametrize("method", ["wl_svd", "random_gine"])
def test_deterministic_finite_and_structure_aware(method: str) -> None:
    first = structural_embeddings(shape_graphs(), method, dimensions=4, seed=0)
    again = structural_embeddings(shape_graphs(), method, dimensions=4, seed=0)
    assert first.shape == (6, 4) and first.dtype == np.float32
    assert np.isfinite(first).all()
    assert np.array_equal(first, again)
    assert np.allclose(first[0], first[5])  # identical formulae, identical vectors


def test_seed_changes_random_gine() -> None:
    a = structural_embeddings(shape_graphs(), "random_gine", dimensions=4, seed=0)
    b = structural_embeddings(shape_graphs(), "random_gine", dimensions=4, seed=1)
    assert not np.allclose(a, b)


def test_unknown_method() -> None:
    with pytest.raises(ValueError, match="wl_svd"):
        structural_embeddings(shape_graphs(), "magic")
