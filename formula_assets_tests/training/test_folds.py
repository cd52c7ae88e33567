"""Folds: the published split kept, new items hashed stably, splits disjoint."""

from collections import Counter

from formula_assets.core.protocol import FOLDS
from formula_assets.training.folds import assign_folds, hash_fold, split_for


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
