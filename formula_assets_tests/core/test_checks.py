"""The rule every embedding table is checked by: finite float32 vectors of the declared width."""

import numpy as np
import pyarrow as pa
import pytest

from formula_assets.core.arrow import embedding_table, with_expected_dimension
from formula_assets.core.checks import SAMPLE, vectors_valid


def vectors(matrix, declared: int | None = 3, column: str = "embedding") -> pa.Table:
    table = embedding_table([f"Q{i}" for i in range(len(matrix))], np.asarray(matrix))
    if column != "embedding":
        table = table.rename_columns(["qid", column])
    return table if declared is None else with_expected_dimension(table, declared)


GOOD = [[1.0, 0.0, 0.5], [0.0, -2.0, 0.0]]


def test_finite_vectors_of_the_declared_width_pass() -> None:
    result = vectors_valid(vectors(GOOD))
    assert result.passed
    assert result.description == "2 finite vectors of 3 dimensions"
    assert result.metadata == {"dimension": 3, "non_finite": 0, "all_zero": 0, "rows": 2}


def test_another_column_is_checked_by_name() -> None:
    table = vectors(GOOD, column="structural")
    assert vectors_valid(table, "structural").passed
    with pytest.raises(KeyError):
        vectors_valid(table)


@pytest.mark.parametrize(
    ("bad", "problem", "counts"),
    [
        (np.nan, "1 vectors with NaN or inf", (1, 0)),
        (np.inf, "1 vectors with NaN or inf", (1, 0)),
        (-np.inf, "1 vectors with NaN or inf", (1, 0)),
        (0.0, "1 all-zero vectors", (0, 1)),
    ],
)
def test_a_bad_vector_is_counted(bad: float, problem: str, counts: tuple[int, int]) -> None:
    matrix = np.array([*GOOD, [0.0, 0.0, 0.0]])
    matrix[2, 1] = bad
    result = vectors_valid(vectors(matrix))
    assert not result.passed and result.description == problem
    assert (result.metadata["non_finite"], result.metadata["all_zero"]) == counts


def test_every_problem_is_said_at_once() -> None:
    matrix = np.array([*GOOD, [0.0, 0.0, 0.0], [np.nan, 1.0, 1.0]])
    result = vectors_valid(vectors(matrix, declared=4))
    assert not result.passed
    assert result.description == (
        "vectors have 3 dimensions, expected 4; 1 vectors with NaN or inf; 1 all-zero vectors"
    )


def test_the_declared_width_must_be_recorded_and_met() -> None:
    missing = vectors_valid(vectors(GOOD, declared=None))
    assert not missing.passed and missing.description == "no expected dimension recorded"
    wrong = vectors_valid(vectors(GOOD, declared=2))
    assert not wrong.passed and wrong.description == "vectors have 3 dimensions, expected 2"


def test_a_missing_component_is_a_non_finite_vector() -> None:
    column = pa.array([[1.0, None, 3.0], [1.0, 2.0, 3.0]], pa.list_(pa.float32(), 3))
    table = with_expected_dimension(pa.table({"qid": ["Q1", "Q2"], "embedding": column}), 3)
    result = vectors_valid(table)
    assert not result.passed and result.description == "1 vectors with NaN or inf"


def test_a_check_lists_ten_offending_formulae_at_most() -> None:
    """Every rule's sample is `SAMPLE` long at most (the UI shows it whole)."""
    from formula_assets.ingest.checks import unique_qids

    qids = [f"Q{i:02}" for i in range(12)]
    table = pa.table({"qid": qids + qids})
    assert SAMPLE == 10
    assert unique_qids(table).metadata["sample"] == qids[:10]


def test_null_vectors_fail() -> None:
    column = pa.array([[1.0, 2.0, 3.0], None], pa.list_(pa.float32(), 3))
    table = with_expected_dimension(pa.table({"qid": ["Q1", "Q2"], "embedding": column}), 3)
    result = vectors_valid(table)
    assert not result.passed and "1 null vectors" in result.description


@pytest.mark.parametrize(
    "column_type", [pa.list_(pa.float32()), pa.list_(pa.float64(), 3), pa.list_(pa.int32(), 3)]
)
def test_only_fixed_width_float32_vectors_are_vectors(column_type: pa.DataType) -> None:
    column = pa.array([[1, 2, 3]], column_type)
    table = with_expected_dimension(pa.table({"qid": ["Q1"], "embedding": column}), 3)
    result = vectors_valid(table)
    assert not result.passed
    assert result.description == f"embedding is {column_type}, not a fixed-size float32 list"
    assert result.metadata == {"problems": [result.description]}
