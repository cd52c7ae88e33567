"""Folds: the published split kept, new items hashed stably, splits disjoint."""

import dataclasses
import hashlib
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import formula_assets.training.folds as folds_module
from formula_assets.core.protocol import FOLDS
from formula_assets.training.folds import (
    DEFAULT_VALIDATION_FRACTION,
    FOLD_SCHEMA,
    Split,
    assign_folds,
    hash_fold,
    split_for,
    split_rows,
)


def test_paper_folds_are_kept_and_others_hashed() -> None:
    table = assign_folds([("Q1", 3), ("Q2", None), ("Q3", 7)]).to_pylist()
    assert table[0] == {"qid": "Q1", "fold": 3, "fold_source": "paper"}
    assert table[1]["fold_source"] == "hash" and table[1]["fold"] == hash_fold("Q2")
    assert table[2]["fold_source"] == "hash"  # 7 is not a fold


def test_hash_folds_are_stable_and_balanced() -> None:
    qids = [f"Q{i}" for i in range(1, 5001)]
    first = [hash_fold(q) for q in qids]
    assert first == [hash_fold(q) for q in qids]
    counts = Counter(first)
    assert set(counts) == set(FOLDS)
    assert max(counts.values()) - min(counts.values()) < 200  # 1,000 ± sampling noise


def test_refresh_never_moves_existing_items() -> None:
    before = {
        r["qid"]: r["fold"] for r in assign_folds([(f"Q{i}", None) for i in range(100)]).to_pylist()
    }
    grown = assign_folds([(f"Q{i}", None) for i in range(300)]).to_pylist()
    assert all(before[r["qid"]] == r["fold"] for r in grown if r["qid"] in before)


def test_split_is_disjoint_and_honest() -> None:
    folds = {f"Q{i}": 1 + i % 5 for i in range(1, 1001)}
    for test_fold in FOLDS:
        split = split_for(folds, test_fold, validation_fraction=0.1)
        train, validation, test = set(split.train), set(split.validation), set(split.test)
        assert not (train & validation or train & test or validation & test)
        assert train | validation | test == set(folds)
        assert all(folds[q] == test_fold for q in test)
        assert all(folds[q] != test_fold for q in train | validation)
        assert 60 < len(validation) < 140
    usable = [f"Q{i}" for i in range(1, 501)]
    split = split_for(folds, 2, usable)
    assert set(split.train) | set(split.validation) | set(split.test) == set(usable)


# --- the hash ---------------------------------------------------------------------------------


def _blake_unit(text: str) -> float:
    """Independent oracle: the first 8 bytes of BLAKE2b-64, big-endian, as a fraction of 2⁶⁴."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return sum(byte << (8 * (7 - i)) for i, byte in enumerate(digest)) / float(1 << 64)


@pytest.mark.parametrize("text", ["", "fold:Q1", "validation:Q42", "fold:Q1234567", "ünï"])
def test_unit_hash_is_blake2b_64_scaled_to_the_unit_interval(text: str) -> None:
    assert folds_module._unit_hash(text) == _blake_unit(text)
    assert 0.0 <= folds_module._unit_hash(text) < 1.0


@given(st.text(max_size=20))
@settings(max_examples=100, deadline=None, derandomize=True)
def test_hash_fold_is_the_fold_at_the_hashed_position(qid: str) -> None:
    expected = FOLDS[int(_blake_unit(f"fold:{qid}") * len(FOLDS))]
    assert hash_fold(qid) == expected
    assert hash_fold(qid, (7, 9)) == (7, 9)[int(_blake_unit(f"fold:{qid}") * 2)]


def test_hash_folds_use_every_fold_of_a_custom_list() -> None:
    folds = Counter(hash_fold(f"Q{i}", (10, 20, 30)) for i in range(600))
    assert set(folds) == {10, 20, 30}
    assert min(folds.values()) > 150


# --- assign_folds -----------------------------------------------------------------------------


def test_assign_folds_table_schema_and_sources() -> None:
    table = assign_folds([("Q1", 5), ("Q2", 1), ("Q3", 0), ("Q4", 6), ("Q5", None)])
    assert table.schema == FOLD_SCHEMA
    rows = table.to_pylist()
    assert [r["qid"] for r in rows] == ["Q1", "Q2", "Q3", "Q4", "Q5"]
    assert [r["fold_source"] for r in rows] == ["paper", "paper", "hash", "hash", "hash"]
    assert rows[0]["fold"] == 5 and rows[1]["fold"] == 1
    assert [r["fold"] for r in rows[2:]] == [hash_fold(q) for q in ("Q3", "Q4", "Q5")]
    assert assign_folds([]).num_rows == 0


# --- split_for --------------------------------------------------------------------------------


FOLD_OF = {f"Q{i}": 1 + i % 5 for i in range(1, 401)}


def _fixed_hash(monkeypatch: pytest.MonkeyPatch, values: dict[str, float]) -> None:
    """Make `_unit_hash` return chosen numbers for validation draws (others: the real hash)."""
    real = folds_module._unit_hash

    def fake(text: str) -> float:
        return values.get(text, real(text))

    monkeypatch.setattr(folds_module, "_unit_hash", fake)


def test_validation_is_exactly_the_pool_items_hashed_below_the_fraction() -> None:
    for fraction in (0.0, 0.1, 0.37, 1.0):
        split = split_for(FOLD_OF, 3, validation_fraction=fraction)
        pool = [q for q in FOLD_OF if FOLD_OF[q] != 3]
        expected = {q for q in pool if _blake_unit(f"validation:{q}") < fraction}
        assert set(split.validation) == expected
        assert set(split.train) == set(pool) - expected
    assert split_for(FOLD_OF, 3, validation_fraction=0.0).validation == ()
    assert split_for(FOLD_OF, 3, validation_fraction=1.0).train == ()


def test_the_fraction_boundary_is_exclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    folds = {"A": 1, "B": 2, "C": 2, "D": 2}
    _fixed_hash(
        monkeypatch,
        {"validation:B": 0.25, "validation:C": math.nextafter(0.25, 0.0), "validation:D": 0.75},
    )
    split = split_for(folds, 1, validation_fraction=0.25)
    assert split.validation == ("C",)
    assert split.train == ("B", "D")
    assert split.test == ("A",)


def test_the_selection_boundary_is_exclusive_too(monkeypatch: pytest.MonkeyPatch) -> None:
    folds = {"A": 1, "B": 2, "C": 2, "D": 2, "E": 2}
    _fixed_hash(
        monkeypatch,
        {
            **{f"validation:{q}": 0.9 for q in "BCDE"},
            "validation:E": 0.05,  # validation first: never also drawn for selection
            "selection:B": 0.25,
            "selection:C": math.nextafter(0.25, 0.0),
            "selection:D": 0.75,
            "selection:E": 0.0,
        },
    )
    split = split_for(folds, 1, validation_fraction=0.1, selection_fraction=0.25)
    assert split.validation == ("E",)
    assert split.selection == ("C",)
    assert split.train == ("B", "D")


def test_default_validation_fraction_is_one_tenth() -> None:
    assert DEFAULT_VALIDATION_FRACTION == 0.1
    assert split_for(FOLD_OF, 4) == split_for(FOLD_OF, 4, validation_fraction=0.1)
    assert split_for(FOLD_OF, 4) != split_for(FOLD_OF, 4, validation_fraction=0.2)


def test_split_lists_are_ordered_by_length_then_text() -> None:
    folds = {q: 1 for q in ("Q10", "Q2", "Q100", "Q1", "Q11")} | {"Q3": 2, "Q20": 2, "Q4": 2}
    split = split_for(folds, 1, validation_fraction=0.5)
    assert split.test == ("Q1", "Q2", "Q10", "Q11", "Q100")
    key = lambda q: (len(q), q)  # noqa: E731
    assert list(split.train) == sorted(split.train, key=key)
    assert list(split.validation) == sorted(split.validation, key=key)
    assert set(split.train) | set(split.validation) == {"Q3", "Q20", "Q4"}


def test_usable_restricts_to_items_with_a_fold() -> None:
    split = split_for(
        {"Q1": 1, "Q2": 2, "Q3": 2}, 1, usable=["Q2", "Q1", "Q9"], validation_fraction=0
    )
    assert split == Split(1, ("Q2",), (), ("Q1",))
    assert split_for({"Q1": 1}, 1, usable=[]) == Split(1, (), (), ())


def test_split_roles_name_every_item() -> None:
    split = Split(2, train=("a", "b"), validation=("c",), test=("d", "e"))
    assert split.roles() == {
        "a": "train",
        "b": "train",
        "c": "validation",
        "d": "test",
        "e": "test",
    }
    real = split_for(FOLD_OF, 5)
    roles = real.roles()
    assert set(roles) == set(FOLD_OF)
    assert all((roles[q] == "test") == (FOLD_OF[q] == 5) for q in FOLD_OF)


def test_split_is_an_immutable_value() -> None:
    split = split_for(FOLD_OF, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        split.train = ()  # type: ignore[misc]
    assert hash(split) == hash(split_for(FOLD_OF, 1))
    assert {split: 1}[split_for(FOLD_OF, 1)] == 1


# --- split_rows --------------------------------------------------------------------------------


def test_split_rows_indexes_into_qids(monkeypatch: pytest.MonkeyPatch) -> None:
    qids = ["Q7", "Q3", "Q12", "Q5", "Q9", "Q1", "Q40"]
    folds = {"Q1": 1, "Q3": 2, "Q5": 2, "Q7": 3, "Q9": 3, "Q12": 4, "Q40": 1, "Q99": 2}
    _fixed_hash(
        monkeypatch,
        {f"validation:{q}": 0.05 if q in ("Q5", "Q12") else 0.5 for q in folds},
    )
    split, train, validation = split_rows(qids, folds, 1)
    assert split == Split(1, ("Q3", "Q7", "Q9"), ("Q5", "Q12"), ("Q1", "Q40"))
    assert train.dtype == np.int64 and validation.dtype == np.int64
    assert train.tolist() == [1, 0, 4]
    assert validation.tolist() == [3, 2]
    assert [qids[i] for i in train] == list(split.train)
    assert not {5, 6} & (set(train.tolist()) | set(validation.tolist()))


def test_split_rows_needs_two_of_train_and_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    qids = ["a", "b", "c", "d", "t"]
    folds = dict.fromkeys(qids, 2) | {"t": 1}

    def with_validation(chosen: set[str]):
        _fixed_hash(monkeypatch, {f"validation:{q}": 0.0 if q in chosen else 0.9 for q in qids})
        return split_rows(qids, folds, 1, validation_fraction=0.5)

    _, train, validation = with_validation({"a", "b"})  # exactly 2 and 2: enough
    assert len(train) == 2 and len(validation) == 2
    with pytest.raises(ValueError, match="fold 1: 3 training and 1 validation"):
        with_validation({"a"})
    with pytest.raises(ValueError, match="fold 1: 1 training and 3 validation"):
        with_validation({"a", "b", "c"})
    with pytest.raises(ValueError, match="need at least 2 of each"):
        split_rows(["a", "b"], {"a": 2, "b": 2}, 1)


def test_split_rows_default_fraction_matches_split_for() -> None:
    qids = sorted(FOLD_OF)
    split, train, validation = split_rows(qids, FOLD_OF, 2)
    assert split == split_for(FOLD_OF, 2, qids, 0.1)
    assert sorted(qids[i] for i in validation) == sorted(split.validation)
    assert len(train) + len(validation) + len(split.test) == len(qids)


def test_the_selection_split_is_outside_training_and_early_stopping() -> None:
    folds = {f"Q{i}": 1 + i % 5 for i in range(1, 2001)}
    split = split_for(folds, 2, validation_fraction=0.1, selection_fraction=0.1)
    parts = [set(split.train), set(split.validation), set(split.selection), set(split.test)]
    assert sum(len(p) for p in parts) == len(folds) == len(set().union(*parts))
    assert not set(split.selection) & set(split.validation)
    assert all(folds[q] != 2 for q in split.selection)
    assert 0.06 < len(split.selection) / 1600 < 0.14  # ≈ 10 % of what validation left
    assert {r for q, r in split.roles().items() if q in split.selection} == {"selection"}
    again = split_for(folds, 2, validation_fraction=0.1, selection_fraction=0.1)
    assert again == split  # stable
    without = split_for(folds, 2, validation_fraction=0.1)
    assert without.selection == () and without.validation == split.validation
    assert set(without.train) == set(split.train) | set(split.selection)
    qids = sorted(folds)
    _, train, validation = split_rows(qids, folds, 2, 0.1, 0.1)
    given = {qids[i] for i in train} | {qids[i] for i in validation}
    assert not given & set(split.selection) and not given & set(split.test)
