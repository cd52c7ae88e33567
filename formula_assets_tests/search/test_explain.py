"""The symbol explanation: aligned items, found items and corpus counts, weighted; an item
left out is left out of all three."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from formula_assets.search.catalogue import Catalogue
from formula_assets.search.explain import (
    ALIGNED,
    ALIGNED_FLOOR,
    CORPUS,
    FOUND,
    WEIGHTS,
    aligned_items,
    explain_symbols,
)
from formula_assets.search.structure import SAME_PATTERN, StructureScores


def catalogue(annotations: dict[str, list[tuple[str, str, str]]]) -> Catalogue:
    qids = list(annotations)
    formulae = pa.table({"qid": qids, "label": qids})
    structure = pa.table(
        {
            "qid": qids,
            "annotations": [
                [{"concept": c, "label": label, "identifier": i} for c, label, i in annotations[q]]
                for q in qids
            ],
        }
    )
    return Catalogue.from_tables(formulae, structure)


ITEMS = catalogue(
    {
        "Q1": [("Q11402", "force", "F"), ("Q11423", "mass", "m"), ("Q11376", "acceleration", "a")],
        "Q2": [("Q11402", "force", "K"), ("Q11423", "mass", "q")],
        "Q3": [("Q35120", "area", "a"), ("Q11423", "mass", "m")],
        "Q4": [("Q35120", "area", "a")],
    }
)
LABELS = ITEMS.concept_labels()


def approx(value: float):
    return pytest.approx(value, abs=1e-4)  # readings are rounded to 4 places


def test_the_corpus_counts_each_item_once() -> None:
    use = ITEMS.symbol_use()
    assert use["a"] == Counter({"Q35120": 2, "Q11376": 1})
    assert ITEMS.symbol_use(exclude=3)["a"] == Counter({"Q35120": 1, "Q11376": 1})


def test_aligned_items_read_a_renamed_query_through_their_own_names() -> None:
    """`K = q w` aligned with Q2's `K = q …` and Q1's `F = m a` (v1, v2, v3 in order)."""
    use = ITEMS.symbol_use()
    (k, q, w) = explain_symbols(
        ["K", "q", "w"], [(1, ["K", "q", "x"], 1.0), (0, ["F", "m", "a"], 1.0)], [], ITEMS, use,
        LABELS,
    )  # fmt: skip
    assert k.readings[0].concept == "Q11402"
    assert k.readings[0].evidence == {ALIGNED: 1.0, CORPUS: 1.0}  # Q2 annotates K so too
    assert q.readings[0].concept == "Q11423"
    assert w.readings[0].concept == "Q11376" and w.readings[0].evidence[ALIGNED] == 1.0
    assert w.readings[0].score == approx(WEIGHTS[ALIGNED])
    assert k.readings[0].items == ("Q2", "Q1")


def test_found_items_and_the_corpus_read_an_identifier_by_its_name() -> None:
    use = ITEMS.symbol_use()
    (a,) = explain_symbols(["a"], [], [2, 0], ITEMS, use, LABELS)
    # found: Q3 (rank 1) says area, Q1 (rank 2) acceleration; corpus: area 2, acceleration 1
    first, second = a.readings[:2]
    assert first.concept == "Q35120" and second.concept == "Q11376"
    assert first.evidence == {FOUND: approx(2 / 3), CORPUS: approx(2 / 3)}
    assert first.score == approx(WEIGHTS[FOUND] * 2 / 3 + WEIGHTS[CORPUS] * 2 / 3)
    assert a.corpus_count == 3


def test_the_corpus_without_an_item_hides_its_own_annotations_only() -> None:
    use = ITEMS.symbol_use()
    hidden = ITEMS.use_without(use, 0, ["a", "m", "z"])
    assert hidden == {
        "a": Counter({"Q35120": 2}),  # Q1's acceleration gone, the areas stay
        "m": Counter({"Q11423": 1}),  # Q3's mass stays
        "z": Counter(),
    }
    assert hidden == {n: ITEMS.symbol_use(exclude=0)[n] for n in ("a", "m", "z")}


def test_an_item_left_out_is_neither_aligned_nor_found() -> None:
    use = ITEMS.symbol_use(exclude=0)
    (a,) = explain_symbols(["a"], [(0, ["a"], 1.0)], [0, 3], ITEMS, use, LABELS, exclude=0)
    assert [r.concept for r in a.readings] == ["Q35120"]  # Q1's acceleration counts nowhere


def test_an_identifier_nobody_annotates_has_no_reading() -> None:
    (z,) = explain_symbols(["z"], [], [0, 1], ITEMS, ITEMS.symbol_use(), LABELS)
    assert z.readings == () and z.corpus_count == 0


def test_the_evidence_weighs_half_aligned_three_tenths_found_a_fifth_corpus() -> None:
    use = ITEMS.symbol_use()
    (w,) = explain_symbols(["w"], [(0, ["a"], 1.0)], [], ITEMS, use, LABELS)
    assert w.readings[0].score == approx(0.5)  # aligned alone: Q1's a is acceleration
    (a,) = explain_symbols(["a"], [], [2, 0], ITEMS, use, LABELS)
    assert a.readings[0].score == approx(0.3 * 2 / 3 + 0.2 * 2 / 3)


def _uniform(n: int) -> Catalogue:
    """n items annotating z as QA, then one annotating it as QB."""
    listed = {f"Q{i}": [("QA", "a", "z")] for i in range(n)}
    return catalogue({**listed, "QLAST": [("QB", "b", "z")]})


def test_only_the_first_25_aligned_items_vote() -> None:
    items = _uniform(25)
    aligned = [(row, ["z"], 1.0) for row in range(26)]
    (z,) = explain_symbols(["z"], aligned, [], items, {}, {})
    assert [r.concept for r in z.readings] == ["QA"]
    (z,) = explain_symbols(["z"], aligned[1:], [], items, {}, {})
    assert [r.concept for r in z.readings] == ["QA", "QB"]


def test_only_the_first_ten_found_items_vote() -> None:
    items = _uniform(10)
    (z,) = explain_symbols(["z"], [], list(range(11)), items, {}, {})
    assert [r.concept for r in z.readings] == ["QA"]
    (z,) = explain_symbols(["z"], [], list(range(1, 11)), items, {}, {})
    assert [r.concept for r in z.readings] == ["QA", "QB"]


def test_aligned_items_are_the_same_pattern_best_first_with_their_votes() -> None:
    found = StructureScores(
        scores=np.array([SAME_PATTERN + 0.5, 0.9, SAME_PATTERN + 1.0, SAME_PATTERN]),
        exact=np.array([True, False, True, True]),
        named=np.zeros(4, dtype=bool),
    )
    rows = np.array([7, 8, 9, -1])  # the last is in no catalogue row
    names = [["a"], ["b"], ["c"], ["d"]]
    assert aligned_items(found, rows, names) == [
        (9, ["c"], pytest.approx(1.0 + ALIGNED_FLOOR)),
        (7, ["a"], pytest.approx(0.5 + ALIGNED_FLOOR)),
    ]
