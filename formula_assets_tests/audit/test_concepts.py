"""`audit.concepts` on vocabularies and vectors small enough to check by hand: the corpus's
concepts and their symbols, a formula's identifiers, annotation vectors, the association of a
formula with each concept, each annotated concept's fit (its percentile by that association),
the shortlist, the suggested concepts and the suspicion. The expected values are worked out
from the definitions in the comments, or recomputed independently with plain NumPy/SciPy."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import pytest
from scipy.stats import rankdata

from formula_assets.audit.concepts import (
    AnnotationQuery,
    Concept,
    ConceptSense,
    ConceptSuggester,
    annotation_vector,
    concept_entry,
    concept_texts,
    corpus_texts,
    identifiers,
    semantic_side,
    suspicion,
    unannotated_symbols,
    vocabulary,
    with_concepts,
)
from formula_assets.methods import registry
from formula_assets.methods.base import LoadedModel, Method, TextQuery
from formula_assets.search.layout import ServingVectors

FROZEN = "sbert_no_cl"  # untrained: a concept's vector is its own sentence vector
TOY = "toy_rotation"  # a member whose "model" is a matrix applied to the sentence vector


def mi(*names: str) -> str:
    return "<math>" + "".join(f"<mi>{n}</mi>" for n in names) + "</math>"


def concept(qid: str, label: str | None, symbol: str | None = None, **more: Any) -> dict:
    return {"qid": qid, "label": label, "description": None, "symbol_mathml": symbol, **more}


class Rotation(Method):
    """Maps a text query by its model, a matrix: a second space in which each concept lies
    elsewhere than in the sentence space."""

    name = TOY
    ensemble_member = True

    def text_vector(self, query: TextQuery, model: LoadedModel | None) -> np.ndarray:
        if model is None:
            raise ValueError("the rotation needs its matrix")
        return cast(np.ndarray, model) @ query.vector()


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._REGISTERED, TOY, Rotation())


def unit(v: Sequence[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    return a / np.linalg.norm(a)


# Four concepts whose sentence vectors are axes or their diagonal; the rotation (the toy
# member's model) maps x → y, y → z, z → x.
TEXTS: dict[str, np.ndarray] = {
    "mass": np.array([1.0, 0.0, 0.0], np.float32),
    "speed": np.array([0.0, 1.0, 0.0], np.float32),
    "time": np.array([0.0, 0.0, 1.0], np.float32),
    "energy": np.array([1.0, 1.0, 0.0], np.float32),
    "item": np.array([0.0, 0.0, 3.0], np.float32),
}
ROTATION = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], np.float32)
VOCABULARY = {
    "Q1": Concept("Q1", "mass", None, frozenset({"m"}), 2),
    "Q2": Concept("Q2", "speed", None, frozenset({"v"}), 1),
    "Q3": Concept("Q3", "time", None, frozenset({"t", "τ"}), 1),
    "Q4": Concept("Q4", "energy", None, frozenset({"E"}), 1),
}


def fold(
    structural: Mapping[str, list[list[float]]], weights: Mapping[str, float]
) -> ServingVectors:
    """One fold of three formulae; each method's semantic side is a decoy (all 7s), which
    the association must never read."""
    spaces = {
        m: (np.asarray(s, np.float32), np.full((len(s), 3), 7.0, np.float32))
        for m, s in structural.items()
    }
    n = len(next(iter(structural.values())))
    return ServingVectors(
        fold=1,
        qids=[f"Q{100 + i}" for i in range(n)],
        splits=["test"] * n,
        spaces=spaces,
        hubness={m: (np.zeros(n), np.zeros(n)) for m in structural},
        summary={"ensemble_weights": {"1": dict(weights)}, "ensemble_hubness_k": {"1": 0}},
    )


def two_members() -> ServingVectors:
    """Row 0 lies along x in the sentence space and along z in the rotated one; row 1 is a
    zero vector in both; row 2 along y in both. Weighed ¼ and ¾."""
    return fold(
        {
            FROZEN: [[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 5.0, 0.0]],
            TOY: [[0.0, 0.0, 3.0], [0.0, 0.0, 0.0], [0.0, 0.5, 0.0]],
        },
        {FROZEN: 0.25, TOY: 0.75},
    )


def suggester(vectors: ServingVectors, **kwargs: Any) -> ConceptSuggester:
    models = cast(dict[str, LoadedModel | None], {FROZEN: None, TOY: ROTATION})
    return ConceptSuggester(vectors, models, VOCABULARY, TEXTS, "sum", **kwargs)


# ------------------------------------------------------------------- vocabulary and symbols


def test_the_vocabulary_is_every_concept_once_first_seen_first_with_its_symbols_and_uses() -> None:
    rows = [
        {"concepts": [concept("Q1", "mass", mi("m")), concept("Q2", "speed", mi("v"))]},
        {"concepts": None},
        {},
        {
            "concepts": [
                concept("Q2", "velocity", mi("u")),  # a later label does not replace the first
                concept("", "no qid"),
                {"label": "no qid at all"},
                concept("Q3", "time"),
            ]
        },
        {"concepts": [concept("Q1", "mass", "<math><msub><mi>m</mi><mn>0</mn></msub></math>")]},
    ]
    got = vocabulary(rows)
    assert list(got) == ["Q1", "Q2", "Q3"]
    assert got["Q1"] == Concept("Q1", "mass", None, frozenset({"m"}), 2)
    assert got["Q2"] == Concept("Q2", "speed", None, frozenset({"v", "u"}), 2)
    assert got["Q3"] == Concept("Q3", "time", None, frozenset(), 1)


def test_identifiers_are_the_lettered_symbol_tokens_once_each_in_tree_order() -> None:
    # b + a^b + c/a + 2 sin x: the function nodes (power, frac) and the operators (+, sin)
    # have letters too, the number 2 has none
    mathml = (
        "<math><mi>b</mi><mo>+</mo><msup><mi>a</mi><mi>b</mi></msup><mo>+</mo>"
        "<mfrac><mi>c</mi><mi>a</mi></mfrac><mo>+</mo><mn>2</mn><mo>sin</mo><mi>x2</mi></math>"
    )
    assert identifiers(mathml) == ["b", "a", "c", "x2"]
    assert identifiers("<math><mn>2</mn></math>") == []


@pytest.mark.parametrize("mathml", [None, "", "<math><mi>broken", "<math><merror/></math>"])
def test_markup_without_a_formula_has_no_identifiers(mathml: str | None) -> None:
    assert identifiers(mathml) == []


def test_unannotated_symbols_are_those_no_concept_symbol_covers_in_formula_order() -> None:
    row = {
        "mathml": mi("F", "m", "a", "F"),
        "concepts": [concept("Q1", "force", mi("F")), concept("Q2", "acceleration")],
    }
    assert unannotated_symbols(row) == ["m", "a"]
    assert unannotated_symbols({**row, "concepts": None}) == ["F", "m", "a"]
    assert unannotated_symbols({"mathml": None, "concepts": row["concepts"]}) == []


# ------------------------------------------------------------------------ texts and vectors


def test_corpus_texts_are_the_items_then_the_concepts_texts_each_once() -> None:
    rows = [
        {
            "label": "kinetic energy",
            "description": "energy of motion",
            "concepts": [concept("Q1", "mass")],
        },
        {"label": "momentum", "description": None, "concepts": [concept("Q2", "speed")]},
    ]
    concepts = {
        "Q1": Concept("Q1", "mass", "quantity of matter", frozenset(), 1),
        "Q2": Concept("Q2", "speed", None, frozenset(), 1),
    }
    assert corpus_texts(rows, concepts) == [
        "kinetic energy",
        "energy of motion",
        "mass",
        "momentum",
        "speed",
        "quantity of matter",
    ]


def test_a_concepts_texts_are_its_label_and_description() -> None:
    assert concept_texts(Concept("Q1", "mass", "quantity of matter", frozenset(), 1)) == [
        "mass",
        "quantity of matter",
    ]
    assert concept_texts(Concept("Q1", "mass", None, frozenset(), 1)) == ["mass"]


def test_an_annotation_vector_is_the_sum_or_the_mean_of_its_texts_vectors() -> None:
    vectors = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])}
    summed = annotation_vector(["a", "b"], vectors, "sum")
    assert summed.dtype == np.float32 and summed.tolist() == [4.0, 6.0]
    assert annotation_vector(["a", "b"], vectors, "mean").tolist() == [2.0, 3.0]
    assert annotation_vector(["b"], vectors, "mean").tolist() == [3.0, 4.0]
    with pytest.raises(ValueError, match="without texts"):
        annotation_vector([], vectors, "sum")


def test_an_annotation_query_is_its_texts_as_one_text_or_as_their_vector() -> None:
    vectors = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])}
    query = AnnotationQuery(("a", "b"), vectors, "mean")
    assert query.text == "a; b"
    assert query.vector().tolist() == [2.0, 3.0]


def test_editing_concepts_copies_the_item_and_a_concept_entry_names_the_concept() -> None:
    item = {"qid": "Q9", "label": "work", "concepts": [concept("Q1", "force")]}
    replacement = (concept("Q2", "distance"),)
    edited = with_concepts(item, replacement)
    assert edited == {"qid": "Q9", "label": "work", "concepts": [concept("Q2", "distance")]}
    assert item["concepts"] == [concept("Q1", "force")]  # the original is untouched
    assert concept_entry(Concept("Q1", "mass", "quantity", frozenset({"m"}), 3)) == {
        "qid": "Q1",
        "label": "mass",
        "description": "quantity",
    }


def test_the_semantic_side_maps_each_annotation_with_each_methods_model(toy: None) -> None:
    queries = [AnnotationQuery(("mass",), TEXTS, "sum"), AnnotationQuery(("time",), TEXTS, "sum")]
    models = cast(dict[str, LoadedModel | None], {TOY: ROTATION})
    got = semantic_side(queries, models, [FROZEN, TOY])
    assert set(got) == {FROZEN, TOY}
    assert got[FROZEN].tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    assert got[TOY].tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]  # x → y, z → x
    empty = semantic_side([], models, [FROZEN, TOY])
    assert set(empty) == {FROZEN, TOY} and all(len(v) == 0 for v in empty.values())


# ------------------------------------------------------------------------------ association


def test_the_association_is_the_members_cosines_weighed_as_the_ensemble_weighs_them(
    toy: None,
) -> None:
    # row 0, sentence space (¼): x against mass x, speed y, time z, energy x+y → 1, 0, 0, 1/√2
    # row 0, rotated space (¾): z against mass y, speed z, time x, energy y+z → 0, 1, 0, 1/√2
    # row 2: y in both; rotated: mass y → 1, energy y+z → 1/√2; sentence: speed 1, energy 1/√2
    r = 1 / math.sqrt(2)
    got = suggester(two_members()).association([0, 1, 2])
    np.testing.assert_allclose(
        got,
        [
            [0.25, 0.75, 0.0, r],
            [0.0, 0.0, 0.0, 0.0],  # a zero vector is associated with nothing, not NaN
            [0.75, 0.25, 0.0, r],
        ],
        atol=1e-12,
    )
    # rows in any order, each row its formula's
    np.testing.assert_allclose(got[[2, 0]], suggester(two_members()).association([2, 0]))


def test_the_fold_ensemble_weights_are_the_default_and_other_weights_replace_them(
    toy: None,
) -> None:
    vectors = two_members()
    alone = suggester(vectors, weights={FROZEN: 1.0}).association([0])
    np.testing.assert_allclose(alone, [[1.0, 0.0, 0.0, 1 / math.sqrt(2)]], atol=1e-12)
    vectors.summary["ensemble_weights"]["1"] = {FROZEN: 1.0, TOY: 0.0}
    # a member weighed 0 takes no part, and its model is never asked (None here would fail)
    models = cast(dict[str, LoadedModel | None], {FROZEN: None, TOY: None})
    quiet = ConceptSuggester(vectors, models, VOCABULARY, TEXTS, "sum")
    assert quiet.members == [FROZEN]
    np.testing.assert_allclose(quiet.association([0]), alone, atol=1e-12)


# ------------------------------------------------------------------------------ concept fit


def test_a_concepts_fit_is_the_share_of_other_concepts_more_associated(toy: None) -> None:
    # row 0's association: speed .75 > energy .71 > mass .25 > time 0 (three others)
    items = [
        {"concepts": [concept("Q2", "speed"), concept("Q1", "mass"), concept("Q3", "time")]},
        {"concepts": [concept("Q4", "energy"), concept("Q99", "not in the vocabulary")]},
        {"concepts": None},
    ]
    fits = suggester(two_members()).concept_fit([0, 0, 0], items)
    assert fits[0] == pytest.approx({"Q2": 0.0, "Q1": 2 / 3, "Q3": 1.0})
    assert fits[1] == pytest.approx({"Q4": 1 / 3})
    assert fits[2] == {}


def test_concepts_tied_in_association_share_the_better_percentile() -> None:
    # sentence space only, row 0 along x: mass 1 > energy 1/√2 > speed = time = 0
    vectors = fold({FROZEN: [[2.0, 0.0, 0.0]]}, {FROZEN: 1.0})
    items = [{"concepts": [concept(q, None) for q in VOCABULARY]}]
    (fit,) = suggester(vectors).concept_fit([0], items)
    assert fit == pytest.approx({"Q1": 0.0, "Q4": 1 / 3, "Q2": 2 / 3, "Q3": 2 / 3})


def test_in_a_vocabulary_of_two_the_worse_concept_is_worst_and_of_one_best() -> None:
    vectors = fold({FROZEN: [[2.0, 0.0, 0.0]]}, {FROZEN: 1.0})
    items = [{"concepts": [concept("Q1", "mass"), concept("Q2", "speed")]}]
    two = {q: VOCABULARY[q] for q in ("Q1", "Q2")}
    got = ConceptSuggester(vectors, {FROZEN: None}, two, TEXTS, "sum").concept_fit([0], items)
    assert got == [{"Q1": 0.0, "Q2": 1.0}]
    one = {"Q2": VOCABULARY["Q2"]}
    got = ConceptSuggester(vectors, {FROZEN: None}, one, TEXTS, "sum").concept_fit([0], items)
    assert got == [{"Q2": 0.0}]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_fit_agrees_with_ranks_computed_apart(seed: int) -> None:
    """Percentile = (rank − 1) / (n − 1), the rank counting ties at their best (SciPy's `min`),
    on random vectors where the association is recomputed with plain NumPy."""
    rng = np.random.default_rng(seed)
    labels = [f"c{i}" for i in range(9)]
    texts = {t: rng.normal(size=5).astype(np.float32) for t in labels}
    concepts = {f"Q{i}": Concept(f"Q{i}", t, None, frozenset(), 1) for i, t in enumerate(labels)}
    structural = rng.normal(size=(4, 5))
    vectors = fold({FROZEN: structural.tolist()}, {FROZEN: 1.0})
    vectors.spaces[FROZEN] = (structural.astype(np.float32), structural.astype(np.float32))
    items = [{"concepts": [concept(q, None) for q in concepts]}] * 4
    fits = ConceptSuggester(vectors, {FROZEN: None}, concepts, texts, "sum").concept_fit(
        [0, 1, 2, 3], items
    )
    for row, fit in enumerate(fits):
        f = structural[row].astype(np.float32).astype(np.float64)
        cosines = [
            float(f @ texts[t] / (np.linalg.norm(f) * np.linalg.norm(texts[t]))) for t in labels
        ]
        ranks = rankdata(-np.asarray(cosines), method="min")
        assert fit == pytest.approx({f"Q{i}": (ranks[i] - 1) / 8 for i in range(9)})


# --------------------------------------------------------------------------- the shortlist


def test_the_shortlist_is_the_most_associated_concepts_less_those_excluded() -> None:
    vectors = fold({FROZEN: [[1.0, 0.0, 0.0]]}, {FROZEN: 1.0})
    s = ConceptSuggester(vectors, {FROZEN: None}, VOCABULARY, TEXTS, "sum")
    row = np.array([0.1, 0.9, 0.5, 0.7])  # Q2 > Q4 > Q3 > Q1
    assert s.shortlist(row, set(), size=2) == ["Q2", "Q4"]
    assert s.shortlist(row, {"Q2"}, size=2) == ["Q4", "Q3"]
    assert s.shortlist(row, {"Q2", "Q4"}, size=2) == ["Q3", "Q1"]
    assert s.shortlist(row, {"Q99"}, size=2) == ["Q2", "Q4"]
    assert s.shortlist(row, set()) == ["Q2", "Q4", "Q3", "Q1"]


# ------------------------------------------------------------------------------ suggestions


def test_suggestions_are_shortlisted_concepts_the_item_lacks_closest_to_its_own_first() -> None:
    # sentence space only, the formula along x. The item has mass; its annotation is "item"
    # (0, 0, 3) + "mass" (1, 0, 0) = (1, 0, 3), length √10. The others' closeness to it:
    # time (0, 0, 1) → 3/√10, energy (1, 1, 0)/√2 → 1/√20, speed (0, 1, 0) → 0.
    vectors = fold({FROZEN: [[2.0, 0.0, 0.0]]}, {FROZEN: 1.0})
    item = {
        "label": "item",
        "mathml": mi("m", "t", "E"),
        "concepts": [concept("Q1", "mass", mi("m"))],
    }
    (got,) = suggester(vectors).suggest([0], [item])
    assert [s.qid for s in got] == ["Q3", "Q4", "Q2"]
    assert [s.label for s in got] == ["time", "energy", "speed"]
    assert [s.score for s in got] == pytest.approx([3 / math.sqrt(10), 1 / math.sqrt(20), 0.0])
    # a suggested concept names an identifier of the formula no concept covers, when the
    # corpus writes it with that symbol: t (not τ); E is energy's; speed's v is not in it
    assert [s.symbol for s in got] == ["t", "E", None]
    (two,) = suggester(vectors).suggest([0], [item], top=2)
    assert [s.qid for s in two] == ["Q3", "Q4"]


def test_an_item_without_annotation_texts_gets_no_suggestion() -> None:
    vectors = fold({FROZEN: [[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]]}, {FROZEN: 1.0})
    silent = {"label": None, "description": "  ", "mathml": mi("x"), "concepts": None}
    items = [silent, {"label": "item", "concepts": None}]
    got = suggester(vectors).suggest([0, 1], items)
    # the other item's annotation is "item" (0, 0, 3): time fits it, and nothing is excluded
    assert len(got) == 2 and got[0] == []
    assert got[1][0].qid == "Q3" and {s.qid for s in got[1]} == set(VOCABULARY)


def fan(n: int) -> tuple[dict[str, Concept], dict[str, np.ndarray]]:
    """n concepts on a quarter circle, at angles k·π/(2n): the formula along x is the more
    associated with a concept the smaller its angle."""
    concepts, texts = {}, {}
    for k in range(n):
        angle = k * math.pi / (2 * n)
        texts[f"c{k}"] = np.array([math.cos(angle), math.sin(angle)], np.float32)
        concepts[f"Q{k}"] = Concept(f"Q{k}", f"c{k}", None, frozenset(), 1)
    return concepts, texts


def test_only_the_30_most_associated_concepts_are_candidates_and_10_are_kept() -> None:
    # the item's annotation is concept 30 itself, the 31st most associated: it is left out,
    # and the ten closest of the first thirty are concepts 29, 28, …, 20
    concepts, texts = fan(40)
    texts["item"] = texts["c30"]
    vectors = fold({FROZEN: [[1.0, 0.0]]}, {FROZEN: 1.0})
    s = ConceptSuggester(vectors, {FROZEN: None}, concepts, texts, "sum")
    assert s.shortlist(s.association([0])[0], set()) == [f"Q{k}" for k in range(30)]
    (got,) = s.suggest([0], [{"label": "item", "concepts": None}])
    assert [g.qid for g in got] == [f"Q{k}" for k in range(29, 19, -1)]


@pytest.mark.parametrize("seed", [3, 4])
def test_suggestions_agree_with_a_plain_numpy_recomputation(seed: int, toy: None) -> None:
    """Two members with random weights, 45 random concepts, items with a few of them: the
    shortlist (30 by weighted cosine, less the item's concepts) ordered by the cosine of
    sentence vectors, 10 kept."""
    rng = np.random.default_rng(seed)
    dim = 6
    labels = [f"c{i}" for i in range(45)]
    texts = {t: rng.normal(size=dim).astype(np.float32) for t in [*labels, "a", "b"]}
    concepts = {f"Q{i}": Concept(f"Q{i}", t, None, frozenset(), 1) for i, t in enumerate(labels)}
    matrix = rng.normal(size=(dim, dim)).astype(np.float32)
    structural = {m: rng.normal(size=(3, dim)) for m in (FROZEN, TOY)}
    weights = {FROZEN: float(rng.uniform(0.1, 1)), TOY: float(rng.uniform(0.1, 1))}
    vectors = fold({m: s.tolist() for m, s in structural.items()}, weights)
    items = [
        {"label": "a", "concepts": [concept(f"Q{i}", labels[i]) for i in (0, 7, 12)]},
        {"label": "b", "description": "a", "concepts": None},
        {"label": "a", "concepts": [concept(f"Q{i}", labels[i]) for i in (3, 4)]},
    ]
    models = cast(dict[str, LoadedModel | None], {FROZEN: None, TOY: matrix})
    got = ConceptSuggester(vectors, models, concepts, texts, "sum").suggest([2, 0, 1], items)

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    sentence = {t: texts[t].astype(np.float64) for t in texts}
    rotated = {t: (matrix @ texts[t]).astype(np.float64) for t in labels}
    for row, item, suggestions in zip([2, 0, 1], items, got, strict=True):
        f = {m: structural[m][row].astype(np.float32).astype(np.float64) for m in structural}
        association = [
            weights[FROZEN] * cos(f[FROZEN], sentence[t]) + weights[TOY] * cos(f[TOY], rotated[t])
            for t in labels
        ]
        present = {c["qid"] for c in item["concepts"] or []}
        by_association = sorted(range(45), key=lambda i: -association[i])
        candidates = [i for i in by_association if f"Q{i}" not in present][:30]
        own_texts = [item["label"], *([item["description"]] if "description" in item else [])]
        own_texts += [c["label"] for c in item["concepts"] or []]
        own = np.sum([sentence[t] for t in own_texts], axis=0)
        closeness = {i: cos(sentence[labels[i]], own) for i in candidates}
        expected = sorted(candidates, key=lambda i: -closeness[i])[:10]
        assert [s.qid for s in suggestions] == [f"Q{i}" for i in expected]
        assert [s.score for s in suggestions] == pytest.approx([closeness[i] for i in expected])


# -------------------------------------------------------------------------------- suspicion


def test_the_suspicion_is_the_mean_and_the_worst_percentile_averaged() -> None:
    assert suspicion({}) is None
    assert suspicion({"a": 0.0, "b": 0.5}) == pytest.approx((0.25 + 0.5) / 2)
    assert suspicion({"a": 0.2}) == pytest.approx(0.2)
    assert suspicion({"a": 1.0, "b": 1.0, "c": 0.1}) == pytest.approx((0.7 + 1.0) / 2)


def test_a_concepts_sense_is_measured_against_the_items_own_concepts() -> None:
    """Item vector (1, 0) (label + description summed); its own concept at 45° has cosine
    √½, the usual closeness. A candidate at 60° (cosine ½) fits ½ / √½ = 0.707; one at 0°
    fits as well as the own one or better: capped at 1; one at 90° not at all."""
    texts = {
        "item": np.array([2.0, 0.0]), "about": np.array([1.0, 0.0]),
        "own": np.array([1.0, 1.0]), "near": np.array([1.0, math.sqrt(3.0)]),
        "same": np.array([3.0, 0.0]), "far": np.array([0.0, 1.0]),
    }  # fmt: skip
    rows = [{"qid": "Q1", "label": "item", "description": "about",
             "concepts": [{"qid": "Q2"}, {"qid": "Q1"}]}]  # fmt: skip
    concepts = {
        q: Concept(q, label, None, frozenset(), 1)
        for q, label in (("Q2", "own"), ("Q3", "near"), ("Q4", "same"), ("Q5", "far"))
    }
    sense = ConceptSense(rows, concepts, texts, "sum")
    assert sense("Q1", "Q3") == pytest.approx(0.5 / math.sqrt(0.5))
    assert sense("Q1", "Q4") == 1.0 and sense("Q1", "Q5") == pytest.approx(0.0)
    assert sense("Q1", "Q9") == 1.0  # a concept without a vector: no judgement
    alone = ConceptSense([{**rows[0], "concepts": []}], concepts, texts, "sum")
    assert alone("Q1", "Q5") == 1.0  # nothing to compare with
