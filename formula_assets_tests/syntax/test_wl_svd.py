"""Weisfeiler–Lehman subtree features + SVD: the default training-free structural vectors."""

import hashlib

import numpy as np
import pyarrow as pa
import pytest

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


def _frac() -> dict:
    """a/b as OPT columns: the fraction (node 0) over a (numerator) and b (denominator)."""
    return {
        "tokens": ["frac", "a", "b"],
        "types": ["O", "V", "V"],
        "parents": [0, 0],
        "children": [1, 2],
        "roles": ["num", "den"],
    }


def test_wl_labels_by_hand() -> None:
    g = _frac()
    labels = wl_labels(g["tokens"], g["types"], g["parents"], g["children"], g["roles"], 2)

    def digest(text: str) -> str:
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()

    # leaves keep their label; the fraction takes its label and its children's, in order
    one = digest("O:frac(num=V:a,den=V:b)")
    two = digest(one + "(num=V:a,den=V:b)")
    assert labels == ["0|O:frac", "0|V:a", "0|V:b", f"1|{one}", f"2|{two}"]
    assert len(one) == 16  # 8-byte BLAKE2b digests


def test_three_rounds_by_default() -> None:
    g = _frac()
    labels = wl_labels(g["tokens"], g["types"], g["parents"], g["children"], g["roles"])
    assert sorted({label.split("|")[0] for label in labels}) == ["0", "1", "2", "3"]
    assert wl_labels(g["tokens"], g["types"], g["parents"], g["children"], g["roles"], 0) == [
        "0|O:frac",
        "0|V:a",
        "0|V:b",
    ]


def test_malformed_graph_columns_are_an_error() -> None:
    g = _frac()
    with pytest.raises(ValueError):
        wl_labels(g["tokens"], g["types"], g["parents"], g["children"][:1], g["roles"])
    with pytest.raises(ValueError):
        wl_labels(g["tokens"], g["types"][:2], g["parents"], g["children"], g["roles"])


def _weighted(graphs) -> np.ndarray:
    """Sublinear TF-IDF of each graph's WL labels (three rounds), rows L2-normalised, by
    hand: tf = 1 + ln(count), idf = ln((1 + n) / (1 + df)) + 1."""
    rows = graphs.to_pylist()
    documents = [
        wl_labels(r["node_tokens"], r["node_types"], r["edge_parent"], r["edge_child"],
                  r["edge_roles"])
        for r in rows
    ]  # fmt: skip
    vocabulary = sorted({label for d in documents for label in d})
    counts = np.array([[d.count(label) for label in vocabulary] for d in documents], float)
    tf = np.where(counts > 0, 1 + np.log(np.where(counts > 0, counts, 1)), 0.0)
    df = (counts > 0).sum(axis=0)
    weighted = tf * (np.log((1 + len(rows)) / (1 + df)) + 1)
    return weighted / np.linalg.norm(weighted, axis=1, keepdims=True)


def _rank_k_gram(weighted: np.ndarray, k: int) -> np.ndarray:
    values, vectors = np.linalg.eigh(weighted @ weighted.T)
    top = np.argsort(values)[::-1][:k]
    return (vectors[:, top] * values[top]) @ vectors[:, top].T


@pytest.mark.parametrize(("dimensions", "components"), [(3, 3), (64, 4)])
def test_the_vectors_are_the_svd_of_sublinear_tf_idf(dimensions: int, components: int) -> None:
    """Five distinct shapes: the vectors' Gram matrix is the best rank-k approximation of the
    TF-IDF rows' (k = the width asked for, at most one less than the number of graphs), and
    a width beyond k is zero padding."""
    graphs = shape_graphs().slice(0, 5)
    vectors = wl_svd_embeddings(graphs, dimensions=dimensions)
    assert vectors.shape == (5, dimensions) and vectors.dtype == np.float32
    weighted = _weighted(graphs)
    np.testing.assert_allclose(vectors @ vectors.T, _rank_k_gram(weighted, components), atol=1e-5)
    assert not vectors[:, components:].any()
    assert np.abs(vectors[:, :components]).sum(axis=0).min() > 1e-3


def test_the_documented_width_and_determinism() -> None:
    graphs = shape_graphs()
    first = wl_svd_embeddings(graphs)
    assert first.shape == (6, 64)  # docs/embeddings.md: 64 dimensions
    assert np.array_equal(first, wl_svd_embeddings(graphs))


def test_one_graph_is_one_unit_component() -> None:
    vector = wl_svd_embeddings(shape_graphs().slice(0, 1), dimensions=8)
    assert vector.shape == (1, 8)
    assert abs(vector[0, 0]) == pytest.approx(1.0, abs=1e-6) and not vector[0, 1:].any()


def _graphs(formulae: list[str]):
    from formula_assets.syntax.opt import build_opt_graphs

    return build_opt_graphs((f"Q{i}", f) for i, f in enumerate(formulae, start=1)).graphs


REPEATS = "<math><mrow><mi>a</mi><mo>+</mo><mi>a</mi><mo>+</mo><mi>a</mi></mrow></math>"
LETTERS = ["<math><mi>x</mi></math>", "<math><mi>y</mi></math>", "<math><mi>z</mi></math>"]


def test_repeated_patterns_count_sublinearly() -> None:
    """A label seen three times in one formula weighs 1 + ln 3, not 3."""
    graphs = pa.concat_tables([shape_graphs().slice(0, 5), _graphs([REPEATS])])
    vectors = wl_svd_embeddings(graphs)
    np.testing.assert_allclose(vectors @ vectors.T, _rank_k_gram(_weighted(graphs), 5), atol=1e-5)


def test_fewer_patterns_than_formulae_bound_the_rank() -> None:
    """Five one-letter formulae over three letters: three labels, so at most two components
    (one less than the labels), whatever width is asked for."""
    graphs = _graphs([*LETTERS, *LETTERS[:2]])
    weighted = _weighted(graphs)
    assert weighted.shape[1] == 3
    vectors = wl_svd_embeddings(graphs, dimensions=8)
    np.testing.assert_allclose(vectors @ vectors.T, _rank_k_gram(weighted, 2), atol=1e-5)
    assert not vectors[:, 2:].any()
