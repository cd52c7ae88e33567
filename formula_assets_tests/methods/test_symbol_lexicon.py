"""`symbol_lexicon`: the symbols Wikidata declares for each concept, counted on the training
rows; a formula is its symbols, its semantics its texts' concepts' symbols, idf-weighted."""

import math

import numpy as np
import pytest
import torch

from formula_assets.core.profiles import PROFILES
from formula_assets.methods import registry
from formula_assets.methods.base import LoadedModel
from formula_assets.methods.symbol_lexicon import METHOD, SETTINGS, text_key
from formula_assets.syntax.opt import build_opt_graphs
from formula_assets.training.data import AlignmentData
from formula_assets.training.inputs import FoldRows
from formula_assets_tests.methods.queries import GraphQuery, TextQuery
from formula_assets_tests.training.descriptions import described

GRAPHS = build_opt_graphs(
    {
        "Q1": "<math><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></math>",
        "Q2": "<math><mi>F</mi><mo>=</mo><mi>m</mi><mi>a</mi></math>",
        "Q3": "<math><mi>W</mi><mo>=</mo><mi>F</mi><mi>d</mi></math>",
        "Q4": "<math><mi>p</mi><mo>=</mo><mi>m</mi><mi>v</mi></math>",
        "Q5": "<math><mi>λ</mi><mo>=</mo><mfrac><mi>c</mi><mi>f</mi></mfrac></math>",
    }.items()
).graphs
ANNOTATIONS = [
    ["mass–energy equivalence", "energy", "mass", "speed of light"],
    ["Newton's second law", "force", "Mass", "acceleration"],
    ["work", "energy", "force", "distance"],
    ["momentum", "mass", "velocity"],
    ["wavelength", "Speed of  Light", "frequency"],
]
DECLARED = [
    [("energy", ["E"]), ("mass", ["m"]), ("speed of light", ["c"])],
    [("force", ["F"]), ("Mass", ["m"]), ("acceleration", ["a"])],
    [("energy", ["W"]), ("force", ["F"]), ("distance", ["d"])],
    [("momentum", ["p"]), ("mass", ["m"]), ("velocity", ["v"])],
    [("wavelength", ["λ"]), ("speed of light", ["c"]), ("frequency", ["f"])],
]
QIDS = ["Q1", "Q2", "Q3", "Q4", "Q5"]
ROWS = FoldRows(train=np.array([0, 1, 2]), test=np.array([3, 4]))


def data(declared=DECLARED, texts=ANNOTATIONS) -> AlignmentData:
    return AlignmentData(
        qids=QIDS,
        graphs=GRAPHS,
        semantic=np.zeros((5, 2), np.float32),
        opt_text=np.zeros((5, 2), np.float32),
        folds={q: 1 if i < 3 else 2 for i, q in enumerate(QIDS)},
        annotation_texts=texts,
        declared_symbols=declared,
    )


def fitted(source: AlignmentData | None = None) -> LoadedModel:
    prepared = METHOD.prepare(source or data(), ROWS, described("symbol_lexicon"), "cpu")
    network = METHOD.network(prepared.description)
    network.load_state_dict(prepared.state)
    return LoadedModel(prepared.description, network.eval())


def vectors(model: LoadedModel, source: AlignmentData | None = None):
    source = source or data()
    rows = np.arange(5)
    structural = METHOD.inputs(model.description, source, "cpu").batch(rows)
    semantic = METHOD.semantic_inputs(model.description, source, "cpu").batch(rows)
    with torch.no_grad():
        return (
            model.module.encode_structural(structural).numpy(),
            model.module.encode_semantic(semantic).numpy(),
        )


def column(model: LoadedModel, symbol: str) -> int:
    return model.description.vocabulary.index(symbol)


def test_the_lexicon_is_counted_on_the_training_rows_only() -> None:
    model = fitted()
    assert set(model.description.vocabulary[2:]) == {"E", "m", "c", "F", "a", "W", "d"}
    keys = {"energy", "mass", "speed of light", "force", "acceleration", "distance"}
    assert set(model.description.semantic_vocabulary[2:]) == keys  # case-folded
    # another test fold's declarations change nothing
    other = [*DECLARED[:3], [("momentum", ["m"])], [("speed of light", ["λ"])]]
    changed = fitted(data(declared=other))
    assert model.description == changed.description
    for name, tensor in model.module.state_dict().items():
        assert torch.equal(tensor, changed.module.state_dict()[name])


def test_each_text_is_the_share_of_its_declarations_by_hand() -> None:
    model = fitted()
    weights = model.module.symbol_weights.numpy()
    # inverse document frequency among the 3 training formulae: m in 2 of them, F in 2, c in 1
    assert weights[column(model, "m")] == pytest.approx(math.log(4 / 3) + 1)
    assert weights[column(model, "c")] == pytest.approx(math.log(4 / 2) + 1)
    assert weights[:2].tolist() == [0, 0]  # padding and unknown weigh nothing
    lexicon = model.module.lexicon.numpy()
    row = model.description.semantic_vocabulary.index("energy")
    expected = np.zeros(len(weights))
    for symbol in ("E", "W"):  # declared once each: half the energy's declarations
        expected[column(model, symbol)] = 0.5 * weights[column(model, symbol)]
    assert lexicon[row] == pytest.approx(expected)
    row = model.description.semantic_vocabulary.index("mass")  # "mass" and "Mass": one key
    assert lexicon[row, column(model, "m")] == pytest.approx(weights[column(model, "m")])
    row = model.description.semantic_vocabulary.index("speed of light")  # declared once
    assert lexicon[row, column(model, "c")] == pytest.approx(weights[column(model, "c")])
    assert np.count_nonzero(lexicon[row]) == 1


def test_a_formula_is_its_known_symbols_and_its_semantics_their_texts_symbols() -> None:
    model = fitted()
    structural, semantic = vectors(model)
    weights = model.module.symbol_weights.numpy()
    c, m = column(model, "c"), column(model, "m")
    # λ = c / f: only c is a known symbol; of its texts only the speed of light is known
    assert np.flatnonzero(structural[4]).tolist() == [c]
    assert structural[4, c] == pytest.approx(weights[c])
    assert np.flatnonzero(semantic[4]).tolist() == [c]
    # W = F d: every symbol but `=` was declared (F, the most declared, has the first id)
    assert model.description.vocabulary[2] == "F"
    assert set(np.flatnonzero(structural[2])) == {column(model, s) for s in ("W", "F", "d")}
    # p = m v: m; its semantics: momentum and velocity unknown, mass → m
    assert np.flatnonzero(structural[3]).tolist() == [m]
    assert np.flatnonzero(semantic[3]).tolist() == [m]


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


def test_the_test_formulae_retrieve_their_own_semantics() -> None:
    structural, semantic = vectors(fitted())
    scores = cosine(structural[3:], semantic[3:])
    assert scores[0, 0] == pytest.approx(1) and scores[1, 1] == pytest.approx(1)
    assert scores[0, 1] == pytest.approx(0) and scores[1, 0] == pytest.approx(0)
    # among the training formulae too: E = m c² is nearer the mass–energy texts than F = m a
    whole = cosine(structural, semantic)
    assert whole[0, 0] > whole[0, 1] and whole[1, 1] > whole[1, 0]


def test_a_text_or_formula_without_known_features_is_the_zero_vector() -> None:
    texts = [*ANNOTATIONS[:4], ["entropy"]]
    _, semantic = vectors(fitted(data(texts=texts)), data(texts=texts))
    assert not semantic[4].any()


def test_queries_are_encoded_as_the_corpus_was() -> None:
    model = fitted()
    structural, semantic = vectors(model)
    for row in range(5):
        batch = METHOD.query_input(model.description, GraphQuery(GRAPHS, row))
        with torch.no_grad():
            assert np.allclose(model.module.encode_structural(batch)[0].numpy(), structural[row])
    speed = METHOD.text_vectors([TextQuery("SPEED  of light"), TextQuery("entropy")], model)
    assert np.allclose(speed[0], semantic[4]) and not speed[1].any()
    assert np.allclose(METHOD.text_vector(TextQuery("speed of light"), model), speed[0])
    with pytest.raises(ValueError, match="its fitted lexicon"):
        METHOD.text_vectors([TextQuery("mass")], None)


def test_it_needs_the_declarations_and_the_texts() -> None:
    with pytest.raises(ValueError, match="pass concept_symbols"):
        METHOD.prepare(data(declared=None), ROWS, described("symbol_lexicon"), "cpu")
    model = fitted()
    with pytest.raises(ValueError, match="pass concept_annotations"):
        METHOD.semantic_inputs(model.description, data(texts=None), "cpu")


def test_text_keys_fold_case_and_spaces() -> None:
    assert text_key("  Speed  of\tLight ") == "speed of light"
    assert text_key("") == ""


def test_it_is_fitted_not_trained_and_the_same_in_every_profile() -> None:
    assert {METHOD.settings(p) for p in PROFILES.values()} == {SETTINGS}
    assert SETTINGS.epochs == 0 and SETTINGS.runs == 1
    assert METHOD in registry.ensemble_members() and METHOD.indexed and METHOD.trained
    others = [registry.get(m).training_cost for m in registry.trained() if m != METHOD.name]
    assert 0 < METHOD.training_cost < min(others)
