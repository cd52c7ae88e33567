"""`bag_dual_cl`: a formula is the bag of its OPT's tokens, its semantics the bag of its
annotation texts and their words; each feature a learned vector, a side the sum of its bag."""

import dataclasses

import numpy as np
import pytest
import torch

from formula_assets.core.profiles import get_profile
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.methods import bag_dual_cl, registry
from formula_assets.methods.bag_dual_cl import METHOD, TEXT, WORD, formula_features, text_features
from formula_assets.methods.base import LoadedModel
from formula_assets.syntax.opt import build_opt_graphs
from formula_assets.training.data import AlignmentData
from formula_assets.training.inputs import BagInputs, FoldRows
from formula_assets_tests.methods.queries import GraphQuery, TextQuery
from formula_assets_tests.training.descriptions import described

GRAPHS = build_opt_graphs(
    {
        "Q1": "<math><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></math>",
        "Q2": "<math><mi>F</mi><mo>=</mo><mi>m</mi><mi>a</mi></math>",
        "Q3": "<math><mi>p</mi><mo>=</mo><mi>m</mi><mi>v</mi></math>",
    }.items()
).graphs
ANNOTATIONS = [
    ["mass–energy equivalence", "energy", "mass", "speed of light"],
    ["Newton's second law", "force", "Mass", "acceleration"],
    ["momentum", "mass", "velocity"],
]
DATA = AlignmentData(
    qids=["Q1", "Q2", "Q3"],
    graphs=GRAPHS,
    semantic=np.zeros((3, 2), np.float32),
    opt_text=np.zeros((3, 2), np.float32),
    folds={"Q1": 1, "Q2": 1, "Q3": 2},
    annotation_texts=ANNOTATIONS,
)
ROWS = FoldRows(train=np.array([0, 1]), test=np.array([2]))


def description():
    settings = dataclasses.replace(bag_dual_cl.PROFILE_SETTINGS["smoke"], out_dim=3)
    return dataclasses.replace(described("bag_dual_cl"), settings=settings)


def test_a_formula_is_its_distinct_tokens() -> None:
    assert formula_features(["=", "E", "=", "m"]) == ["=", "E", "m"]
    assert formula_features([]) == []


def test_annotation_texts_are_their_folded_texts_and_words() -> None:
    features = text_features(["Speed  of Light", "speed of light", "  ", "c"])
    assert features == sorted(
        [f"{TEXT}speed of light", f"{WORD}speed", f"{WORD}of", f"{WORD}light", f"{TEXT}c",
         f"{WORD}c"]
    )  # fmt: skip
    assert text_features(["Newton's law"]) == sorted(
        [f"{TEXT}newton's law", f"{WORD}newton", f"{WORD}s", f"{WORD}law"]
    )
    assert text_features([]) == []


def test_both_vocabularies_come_from_the_training_rows_only() -> None:
    prepared = METHOD.prepare(DATA, ROWS, description(), "cpu")
    fitted = prepared.description
    train_tokens = {t for r in (0, 1) for t in GRAPHS["node_tokens"][r].as_py()}
    assert set(fitted.vocabulary[2:]) == train_tokens
    assert fitted.vocabulary[:2] == (TokenVocabulary.PAD, TokenVocabulary.UNK)
    assert "p" not in fitted.vocabulary and "v" not in fitted.vocabulary
    semantic = set(fitted.semantic_vocabulary[2:])
    assert semantic == set(text_features(ANNOTATIONS[0])) | set(text_features(ANNOTATIONS[1]))
    assert f"{TEXT}momentum" not in semantic and f"{WORD}velocity" not in semantic
    assert f"{TEXT}mass" in semantic  # "mass" and "Mass": one feature


def test_features_the_training_rows_lack_are_left_out_of_the_bags() -> None:
    prepared = METHOD.prepare(DATA, ROWS, description(), "cpu")
    fitted = prepared.description
    tokens = TokenVocabulary.from_tokens(fitted.vocabulary)
    ids, starts = prepared.structural.batch(np.array([2]))
    # Q3 is p = m v: only = and m (and the row's structure tokens) were seen in training
    known = [t for t in formula_features(GRAPHS["node_tokens"][2].as_py()) if t in tokens._index]
    assert ids.tolist() == tokens.ids(known) and starts.tolist() == [0]
    assert {"p", "v"}.isdisjoint(known) and {"=", "m"} <= set(known)
    texts = TokenVocabulary.from_tokens(fitted.semantic_vocabulary)
    semantic_ids, _ = METHOD.semantic_inputs(fitted, DATA, "cpu").batch(np.array([2]))
    assert semantic_ids.tolist() == texts.ids([f"{TEXT}mass", f"{WORD}mass"])
    assert min(ids.tolist() + semantic_ids.tolist()) > 1  # never padding or unknown


def test_a_side_is_the_sum_of_its_features_vectors() -> None:
    network = METHOD.network(dataclasses.replace(description(), vocabulary=("a",) * 5,
                                                 semantic_vocabulary=("b",) * 4))  # fmt: skip
    assert network.structural.weight.shape == (5, 3) and network.semantic.weight.shape == (4, 3)
    assert network.structural.weight[0].abs().sum() == 0  # padding
    bags = BagInputs([[2, 4], [], [3, 3]])
    vectors = network.encode_structural(bags.batch(np.array([0, 1, 2])))
    weight = network.structural.weight
    assert torch.allclose(vectors[0], weight[2] + weight[4])
    assert vectors[1].abs().sum() == 0  # an empty bag
    assert torch.allclose(vectors[2], 2 * weight[3])
    semantic = network.encode_semantic(BagInputs([[1, 3]]).batch(np.array([0])))
    assert torch.allclose(semantic[0], network.semantic.weight[1] + network.semantic.weight[3])


def test_queries_are_encoded_as_the_corpus_was() -> None:
    fitted = METHOD.prepare(DATA, ROWS, description(), "cpu").description
    torch.manual_seed(0)
    network = METHOD.network(fitted).eval()
    model = LoadedModel(fitted, network)
    corpus = network.encode_structural(METHOD.inputs(fitted, DATA, "cpu").batch(np.arange(3)))
    for row in range(3):
        assert np.allclose(
            METHOD.formula_vector(GraphQuery(GRAPHS, row), model), corpus[row].detach()
        )
    # an annotation's texts are one bag; a text query is the bag of that one text
    semantic = network.encode_semantic(
        METHOD.semantic_inputs(fitted, DATA, "cpu").batch(np.array([2]))
    )
    (mass,) = METHOD.text_vectors([TextQuery("mass")], model)
    assert np.allclose(mass, semantic[0].detach().numpy())  # Q3's only known text is "mass"
    one = METHOD.text_vector(TextQuery("Speed of light"), model)
    ids = TokenVocabulary.from_tokens(fitted.semantic_vocabulary).ids(
        [f"{TEXT}speed of light", f"{WORD}speed", f"{WORD}of", f"{WORD}light"]
    )
    assert np.allclose(one, network.semantic.weight[ids].sum(0).detach().numpy())
    unknown = METHOD.text_vector(TextQuery("momentum"), model)
    assert not unknown.any()  # nothing of it was seen in training
    with pytest.raises(ValueError, match="encodes queries with its trained model"):
        METHOD.text_vectors([TextQuery("mass")], None)


def test_it_reads_the_annotation_texts() -> None:
    without = dataclasses.replace(DATA, annotation_texts=None)
    with pytest.raises(ValueError, match="bag_dual_cl reads the annotation texts"):
        METHOD.prepare(without, ROWS, description(), "cpu")
    fitted = METHOD.prepare(DATA, ROWS, description(), "cpu").description
    with pytest.raises(ValueError, match="bag_dual_cl reads the annotation texts"):
        METHOD.semantic_inputs(fitted, without, "cpu")


def test_it_is_a_trained_ensemble_member_after_the_other_gradient_trained_methods() -> None:
    assert METHOD in registry.ensemble_members()
    assert registry.trained()[-2:] == ("bag_dual_cl", "symbol_lexicon")
    assert METHOD.indexed and METHOD.trained


def _gradient_trained_others() -> list[str]:
    """The other methods trained by gradient (not fitted in closed form, with no epochs)."""
    default = get_profile("default")
    return [
        m
        for m in registry.trained()
        if m != METHOD.name and registry.trained_method(m).settings(default).epochs > 0
    ]


def test_it_is_the_cheapest_gradient_trained_method_for_schedulers() -> None:
    """A fold trains in about half of sbert_dual_cl's time (docs/training.md: ≈ 20 s against
    ≈ 45 s in the cold build), so a scheduler weighs it below every other method trained by
    gradient (only the lexicon, counted in a second, weighs less)."""
    others = [registry.get(m).training_cost for m in _gradient_trained_others()]
    assert 0 < METHOD.training_cost < min(others)
    assert registry.get("symbol_lexicon").training_cost < METHOD.training_cost
