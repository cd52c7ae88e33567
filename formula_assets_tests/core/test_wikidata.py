"""What a QID is."""

from formula_assets.core.wikidata import is_qid


def test_is_qid() -> None:
    assert is_qid("Q1") and is_qid("Q123456789012")
    assert not is_qid("Q") and not is_qid("q1") and not is_qid("Q1 ") and not is_qid("Q01")
    assert not is_qid("Q1234567890123")  # thirteen digits: longer than any item
