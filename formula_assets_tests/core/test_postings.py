import numpy as np
import pytest
from scipy import sparse

from formula_assets.core.postings import posting_sum


def _postings(documents: int, density: float = 0.4) -> sparse.csr_matrix:
    rng = np.random.default_rng(3)
    dense = rng.random((5, documents)) * (rng.random((5, documents)) < density)
    dense[4] = 0.0  # a term no document has
    return sparse.csr_matrix(dense)


# long lists (one bincount) and short ones (added in place)
@pytest.mark.parametrize("density", [0.4, 0.005])
def test_the_weighted_sum_of_the_terms_rows(density: float) -> None:
    postings = _postings(400, density)
    terms, weights = [0, 2, 2, 4], [0.5, 2.0, 1.0, 9.0]  # a repeated term counts again
    expected = sum(w * postings.toarray()[t] for t, w in zip(terms, weights, strict=True))
    np.testing.assert_allclose(posting_sum(postings, terms, weights), expected)
    np.testing.assert_allclose(posting_sum(postings, [1, 3]), postings.toarray()[[1, 3]].sum(0))


def test_no_terms_score_nothing() -> None:
    out = posting_sum(_postings(400), [])
    assert out.shape == (400,) and not out.any()


def test_short_lists_take_the_in_place_path_with_the_same_answer() -> None:
    postings = sparse.csr_matrix(np.eye(3, 100))  # one entry per term: far below the cut
    np.testing.assert_allclose(posting_sum(postings, [1, 1], [2.0, 3.0])[1], 5.0)


def test_weights_must_match_the_terms() -> None:
    with pytest.raises(ValueError, match="2 terms but 1 weights"):
        posting_sum(_postings(7), [0, 1], [1.0])
