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


def test_random_gine_batches_give_the_vectors_one_batch_would() -> None:
    """600 graphs go through the encoder 512 at a time: every graph gets its own vector,
    the same as when it is encoded in a batch of its own kind."""
    import pyarrow as pa

    six = shape_graphs()
    many = pa.concat_tables([six] * 100)
    vectors = structural_embeddings(many, "random_gine", dimensions=4, seed=0)
    assert vectors.shape == (600, 4)
    alone = structural_embeddings(six, "random_gine", dimensions=4, seed=0)
    np.testing.assert_allclose(vectors, np.tile(alone, (100, 1)), atol=1e-5)
    assert structural_embeddings(six.slice(0, 0), "random_gine", dimensions=4).shape == (0, 4)


def test_random_gine_leaves_the_global_generator_alone() -> None:
    import torch

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    structural_embeddings(shape_graphs(), "random_gine", dimensions=4, seed=7)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("method", ["wl_svd", "random_gine"])
def test_the_default_width_is_the_documented_64(method: str) -> None:
    assert structural_embeddings(shape_graphs(), method).shape == (6, 64)


def test_called_without_a_seed_it_gives_what_the_asset_gives_by_default() -> None:
    """The function's defaults and the asset's config defaults are one setting."""
    from formula_assets.defs.syntax.structural_embeddings import StructuralConfig

    config = StructuralConfig()
    graphs = shape_graphs()
    assert np.array_equal(
        structural_embeddings(graphs, "random_gine"),
        structural_embeddings(graphs, "random_gine", config.dimensions, config.seed),
    )
