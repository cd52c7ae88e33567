"""The rule of `search_index`' check, and how one fold is read back, on hand-made indexes."""

import json

import numpy as np
import pyarrow as pa
import pytest

from formula_assets.methods import registry
from formula_assets.search.checks import index_complete
from formula_assets.search.layout import (
    INDEX_SCHEMA,
    METADATA_KEY,
    SEMANTIC,
    STRUCTURAL,
    index_summary,
    serving_vectors,
)

QIDS = ["Q1", "Q2", "Q3"]
SPLITS = ["train", "test", "test"]


def rows(fold: int, method: str, qids=QIDS, width: int = 2, offset: float = 0.0) -> list[dict]:
    return [
        {
            "fold": fold,
            "method": method,
            "qid": q,
            "split": s,
            "structural": [offset + i + 1.0] * width,
            "semantic": [-(offset + i + 1.0)] * width,
            "structural_hubness": 0.1 * i,
            "semantic_hubness": 0.2 * i,
        }
        for i, (q, s) in enumerate(zip(qids, SPLITS, strict=False))
    ]


def index(parts: list[dict], serving: int = 1, **summary) -> pa.Table:
    metadata = {METADATA_KEY: json.dumps({"serving_fold": serving, **summary})}
    return pa.Table.from_pylist(parts, schema=INDEX_SCHEMA.with_metadata(metadata))


def complete(folds=(1, 2)) -> list[dict]:
    return [r for f in folds for m in registry.indexed() for r in rows(f, m)]


def test_every_fold_indexing_every_method_over_the_same_formulae_passes() -> None:
    result = index_complete(index(complete()))
    assert result.passed, result.description
    assert result.description == (
        "every fold indexes every method over the same formulae, vectors finite"
    )
    assert result.metadata == {"problems": [], "folds": [1, 2]}


def test_an_empty_index_fails() -> None:
    result = index_complete(index([]))
    assert not result.passed and result.metadata["problems"] == ["the index is empty"]


def test_the_serving_fold_must_be_indexed() -> None:
    result = index_complete(index(complete(), serving=3))
    assert not result.passed
    assert result.description == "1 problem(s): serving fold 3 is not indexed"


def test_a_method_missing_or_over_other_formulae_fails() -> None:
    indexed = registry.indexed()
    missing = [r for r in complete() if not (r["fold"] == 2 and r["method"] == indexed[-1])]
    result = index_complete(index(missing))
    assert result.metadata["problems"] == ["fold 2: the methods index different or no formulae"]
    other = (
        [r for r in complete() if r["method"] != indexed[0]]
        + rows(1, indexed[0], QIDS[:2])
        + rows(2, indexed[0])
    )
    result = index_complete(index(other))
    assert result.metadata["problems"] == ["fold 1: the methods index different or no formulae"]


@pytest.mark.parametrize("side", ["structural", "semantic"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_vectors_fail_by_method_and_side(side: str, bad: float) -> None:
    parts = complete()
    method = registry.indexed()[0]
    target = next(r for r in parts if r["fold"] == 2 and r["method"] == method)
    target[side] = [bad, 1.0]
    result = index_complete(index(parts))
    assert result.metadata["problems"] == [f"fold 2 {method}: non-finite {side} vectors"]


def test_one_fold_reads_back_as_matrices_per_method() -> None:
    first, second = registry.indexed()[:2]
    table = index(
        rows(1, first) + rows(1, second, offset=10.0) + rows(2, first, offset=100.0),
        ensemble_weights={"1": {first: 0.25}},
        ensemble_hubness_k={"1": 5},
    )
    fold = serving_vectors(table, 1)
    assert fold.fold == 1 and fold.qids == QIDS and fold.splits == SPLITS
    assert set(fold.spaces) == {first, second}
    structural, semantic = fold.spaces[second]
    np.testing.assert_array_equal(structural, [[11.0, 11.0], [12.0, 12.0], [13.0, 13.0]])
    np.testing.assert_array_equal(semantic, -structural)
    # the names of the two sides, as the searcher reads a space
    assert fold.spaces[second][STRUCTURAL] is structural
    assert fold.spaces[second][SEMANTIC] is semantic
    np.testing.assert_allclose(fold.hubness[first][0], [0.0, 0.1, 0.2])
    np.testing.assert_allclose(fold.hubness[first][1], [0.0, 0.2, 0.4])
    assert fold.weights == {first: 0.25} and fold.hubness_k == 5
    assert serving_vectors(table, 2).spaces[first][0][0, 0] == 101.0
    with pytest.raises(ValueError, match="no fold 4"):
        serving_vectors(table, 4)
    assert index_summary(table.schema)["serving_fold"] == 1
    assert index_summary(pa.schema([])) == {}


def test_the_problems_listed_are_ten_at_most() -> None:
    parts = complete(folds=tuple(range(1, 13)))
    for r in parts:
        r["structural"] = [np.nan, 0.0]
    result = index_complete(index(parts))
    problems = result.metadata["problems"]
    assert len(problems) == 10 and problems[0].startswith("fold 1 ")
    assert result.description.startswith(f"{len(registry.indexed()) * 12} problem(s): fold 1")


def test_a_fold_of_one_formula_reads_back() -> None:
    method = registry.indexed()[0]
    fold = serving_vectors(index(rows(1, method, QIDS[:1], width=3)), 1)
    assert fold.qids == ["Q1"]
    assert fold.spaces[method][STRUCTURAL].shape == (1, 3)
    assert fold.spaces[method][SEMANTIC].shape == (1, 3)
