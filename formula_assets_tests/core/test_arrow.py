"""Vector columns and the metadata embedding tables carry, on small hand-made tables."""

import numpy as np
import pyarrow as pa
import pytest

from formula_assets.core.arrow import (
    aligned_matrices,
    embedding_matrix,
    embedding_schema,
    embedding_table,
    expected_dimension,
    recorded_aggregation,
    recorded_identity,
    recorded_model,
    vector_column,
    vectors,
    with_aggregation,
    with_expected_dimension,
    with_model,
)

MATRIX = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)


def test_a_matrix_round_trips_through_a_vector_column() -> None:
    column = vector_column(MATRIX.astype(np.float64))
    assert column.type == pa.list_(pa.float32(), 3)
    assert column.to_pylist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    back = vectors(column, 3)
    assert back.dtype == np.float32 and back.shape == (2, 3)
    np.testing.assert_array_equal(back, MATRIX)
    chunked = pa.chunked_array([column.slice(0, 1), column.slice(1, 1)])
    np.testing.assert_array_equal(vectors(chunked, 3), MATRIX)
    one = vectors(vector_column(MATRIX[:1]), 3)
    assert one.shape == (1, 3)


def test_a_missing_component_reads_as_nan() -> None:
    column = pa.array([[1.0, None, 3.0]], pa.list_(pa.float32(), 3))
    read = vectors(column, 3)
    assert read.shape == (1, 3) and np.isnan(read[0, 1]) and read[0, 2] == 3.0


def test_an_embedding_table_has_its_qids_columns_and_vectors() -> None:
    table = embedding_table(["Q1", "Q2"], MATRIX, num_texts=[2, 1])
    assert table.column_names == ["qid", "num_texts", "embedding"]
    assert table.column("num_texts").to_pylist() == [2, 1]
    qids, matrix = embedding_matrix(table)
    assert qids == ["Q1", "Q2"]
    np.testing.assert_array_equal(matrix, MATRIX)
    schema = embedding_schema(3, [("num_texts", pa.int32())])
    assert schema.names == ["qid", "num_texts", "embedding"]
    assert schema.field("embedding").type == pa.list_(pa.float32(), 3)
    assert embedding_schema(5).names == ["qid", "embedding"]


def test_aligned_matrices_keep_the_formulae_of_both_in_the_left_order() -> None:
    left = embedding_table(["Q1", "Q2", "Q3"], np.eye(3, dtype=np.float32))
    right = embedding_table(["Q3", "Q9", "Q1"], np.arange(6, dtype=np.float32).reshape(3, 2))
    qids, lx, rx = aligned_matrices(left, right)
    assert qids == ["Q1", "Q3"]
    np.testing.assert_array_equal(lx, [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(rx, [[4, 5], [0, 1]])


PLAIN = pa.table({"qid": ["Q1"]})
OTHER = PLAIN.replace_schema_metadata({b"other": b"kept"})


@pytest.mark.parametrize("table", [PLAIN, OTHER], ids=["no metadata", "other metadata"])
def test_recorded_facts_round_trip_and_keep_the_other_metadata(table: pa.Table) -> None:
    assert expected_dimension(table) is None
    assert recorded_model(table) is None and recorded_identity(table) is None
    assert recorded_aggregation(table) is None
    recorded = with_aggregation(with_model(with_expected_dimension(table, 384), "m", "abc"), "mean")
    assert expected_dimension(recorded) == 384
    assert recorded_model(recorded) == "m" and recorded_identity(recorded) == "abc"
    assert recorded_aggregation(recorded) == "mean"
    others = dict(table.schema.metadata or {})
    assert {k: v for k, v in recorded.schema.metadata.items() if k in others} == others
    assert expected_dimension(with_expected_dimension(table, 0)) == 0
