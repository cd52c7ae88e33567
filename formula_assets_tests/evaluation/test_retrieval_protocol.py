"""Retrieval (Table 2) on hand-made vectors: the ensemble's test scores against an oracle,
with hubness measured on the training split only (never on the test fold)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from formula_assets.core.protocol import DIRECTIONS, ENSEMBLE
from formula_assets.evaluation.inputs import EvaluationInputs
from formula_assets.evaluation.lineup import Lineup
from formula_assets.evaluation.retrieval import evaluate
from formula_assets.methods.base import TrainedMethod

SPLITS = {"train": 40, "selection": 30, "test": 25}
DIM = 8


@dataclass
class Vectors:
    """A fold model's vectors per split (the `SplitVectors` protocol)."""

    splits: dict[str, tuple[list[str], np.ndarray, np.ndarray]]

    def split_vectors(self, split):
        return self.splits[split]


class Member(TrainedMethod):
    ensemble_member = True

    def __init__(self, name: str) -> None:
        self.name = name  # type: ignore[misc]


MEMBERS = (Member("alpha"), Member("beta"))
LINEUP = Lineup(methods=MEMBERS, trained=("alpha", "beta"), members=MEMBERS)
INPUTS = EvaluationInputs({}, {}, {}, {}, {})


def _space(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Paired vectors where a third of the semantic side are hubs: they carry a component
    every structural vector shares, so they crowd the top of every ranking."""
    shared = np.zeros(DIM)
    shared[0] = 3.0
    latent = rng.normal(size=(n, DIM))
    structural = latent + 0.5 * rng.normal(size=(n, DIM)) + shared
    hubs = (np.arange(n) % 3 == 0)[:, None]
    semantic = latent + 0.5 * rng.normal(size=(n, DIM)) + np.where(hubs, shared, 0.0)
    return structural, semantic


def _models(seed: int = 0) -> dict[tuple[int, str], Vectors]:
    rng = np.random.default_rng(seed)
    out = {}
    for member in ("alpha", "beta"):
        splits = {}
        for split, n in SPLITS.items():
            qids = [f"Q{split}{i}" for i in range(n)]
            splits[split] = (qids, *_space(rng, n))
        out[(0, member)] = Vectors(splits)
    return out


def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _hubness(candidates: np.ndarray, references: np.ndarray, k: int) -> np.ndarray:
    """Mean cosine of each candidate to its k most similar references (0 for k = 0)."""
    if k == 0:
        return np.zeros(len(candidates))
    cos = _unit(candidates) @ _unit(references).T
    return np.round(np.sort(cos, axis=1)[:, ::-1][:, :k].mean(axis=1), 6)


def _oracle_reciprocal_ranks(models, weights, k, direction) -> np.ndarray:
    """Σ weight × (cosine − ½ hubness of the candidate against the training split), then the
    gold's reciprocal rank (the scores here have no ties)."""
    total = 0.0
    for member, weight in weights.items():
        vectors = models[(0, member)].splits
        _, test_x, test_y = vectors["test"]
        _, train_x, train_y = vectors["train"]
        if direction == DIRECTIONS[0]:  # structural queries, semantic candidates
            queries, candidates, reference = test_x, test_y, train_x
        else:
            queries, candidates, reference = test_y, test_x, train_y
        cos = _unit(queries) @ _unit(candidates).T
        total = total + weight * (cos - 0.5 * _hubness(candidates, reference, k)[None, :])
    gold = np.diag(total)[:, None]
    return 1.0 / (1 + (total > gold).sum(axis=1))


@pytest.fixture(scope="module")
def models():
    return _models()


@pytest.fixture(scope="module")
def evaluation(models):
    return evaluate(INPUTS, models, LINEUP)


def test_the_fixture_makes_hubness_matter(evaluation) -> None:
    """Without a k > 0 the tests below could not tell where hubness is measured."""
    assert evaluation.ensemble_hubness_k[0] > 0


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_ensemble_scores_match_an_oracle_with_training_side_hubness(
    models, evaluation, direction
) -> None:
    weights = evaluation.ensemble_weights[0]
    k = evaluation.ensemble_hubness_k[0]
    expected = _oracle_reciprocal_ranks(models, weights, k, direction)
    np.testing.assert_allclose(evaluation.reciprocal_ranks[(0, ENSEMBLE, direction)], expected)
    # and the correction changes ranks here: the same weights without it rank otherwise
    plain = _oracle_reciprocal_ranks(models, weights, 0, direction)
    assert not np.allclose(plain, expected)


def test_scrambling_the_test_fold_leaves_the_training_side_hubness_alone(models) -> None:
    """One test formula replaced by noise: every other test query's ranking among the other
    candidates is what the training-side hubness says it is, unchanged, and the choice too."""
    rng = np.random.default_rng(7)
    scrambled = {}
    for key, model in models.items():
        splits = dict(model.splits)
        qids, x, y = splits["test"]
        x, y = x.copy(), y.copy()
        x[:5], y[:5] = 10 * rng.normal(size=(5, DIM)), 10 * rng.normal(size=(5, DIM))
        splits["test"] = (qids, x, y)
        scrambled[key] = Vectors(splits)
    before, after = evaluate(INPUTS, models, LINEUP), evaluate(INPUTS, scrambled, LINEUP)
    assert after.ensemble_weights == before.ensemble_weights
    assert after.ensemble_hubness_k == before.ensemble_hubness_k
    for direction in DIRECTIONS:
        expected = _oracle_reciprocal_ranks(
            scrambled, after.ensemble_weights[0], after.ensemble_hubness_k[0], direction
        )
        np.testing.assert_allclose(after.reciprocal_ranks[(0, ENSEMBLE, direction)], expected)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_members_are_scored_by_plain_cosine(models, evaluation, direction) -> None:
    for member in ("alpha", "beta"):
        expected = _oracle_reciprocal_ranks(models, {member: 1.0}, 0, direction)
        np.testing.assert_allclose(evaluation.reciprocal_ranks[(0, member, direction)], expected)


class Lexical:
    """A method without vectors (as BM25): it scores with its own scorers, here the sum of
    the two members' cosines, so the expected ranks can be computed by hand."""

    name = "lexical"

    def space(self, data, split, qids):
        return None

    def scorers(self, data, split, qids):
        assert split == "test" and qids == data.models["alpha"].split_vectors("test")[0]
        return _SumScorer(data, False), _SumScorer(data, True)


@dataclass
class _SumScorer:
    data: object
    reverse: bool

    @property
    def size(self) -> int:
        return len(self.data.models["alpha"].split_vectors("test")[0])

    def block(self, rows):
        total = 0.0
        for member in ("alpha", "beta"):
            _, x, y = self.data.models[member].split_vectors("test")
            if self.reverse:
                x, y = y, x
            total = total + _unit(x[rows]) @ _unit(y).T
        return total


WITH_LEXICAL = Lineup(methods=(Lexical(), *MEMBERS), trained=("alpha", "beta"), members=MEMBERS)


def _two_folds():
    models = _models(0)
    for (_, member), vectors in _models(1).items():
        models[(1, member)] = vectors
    return models


def _rank_summary(reciprocal: np.ndarray, ranks: np.ndarray) -> dict[str, float]:
    return {
        "recall_at_1": float(np.mean(ranks <= 1)),
        "recall_at_5": float(np.mean(ranks <= 5)),
        "recall_at_10": float(np.mean(ranks <= 10)),
        "mrr": float(np.mean(reciprocal)),
    }


def test_every_fold_method_and_direction_is_one_row_of_hand_ranked_numbers() -> None:
    models = _two_folds()
    result = evaluate(INPUTS, models, WITH_LEXICAL)
    rows = result.scores.to_pylist()
    names = ["lexical", "alpha", "beta", ENSEMBLE]
    assert [(r["fold"], r["method"], r["direction"]) for r in rows] == [
        (f, m, d) for f in (0, 1) for m in names for d in DIRECTIONS
    ]
    assert result.scores.schema.names == [
        "fold", "method", "direction", "recall_at_1", "recall_at_5", "recall_at_10", "mrr",
        "candidates",
    ]  # fmt: skip
    for row in rows:
        fold, method, direction = row["fold"], row["method"], row["direction"]
        assert row["candidates"] == SPLITS["test"]
        if method == "lexical":
            total = 0.0
            for member in ("alpha", "beta"):
                _, x, y = models[(fold, member)].splits["test"]
                if direction == DIRECTIONS[1]:
                    x, y = y, x
                total = total + _unit(x) @ _unit(y).T
            ranks = 1 + (total > np.diag(total)[:, None]).sum(axis=1)
            reciprocal = 1.0 / ranks
        else:
            weights = {method: 1.0} if method != ENSEMBLE else result.ensemble_weights[fold]
            k = 0 if method != ENSEMBLE else result.ensemble_hubness_k[fold]
            fold_models = {
                (0, m): models[(fold, m)] for m in ("alpha", "beta")
            }  # the oracle reads fold 0
            reciprocal = _oracle_reciprocal_ranks(fold_models, weights, k, direction)
            ranks = np.rint(1.0 / reciprocal)
        np.testing.assert_allclose(result.reciprocal_ranks[(fold, method, direction)], reciprocal)
        expected = _rank_summary(reciprocal, ranks)
        assert {k: row[k] for k in expected} == pytest.approx(expected)
    assert set(result.ensemble_weights) == set(result.ensemble_hubness_k) == {0, 1}


def test_the_ensembles_choices_round_trip_through_their_table() -> None:
    from formula_assets.evaluation.ensemble import EnsembleChoice
    from formula_assets.evaluation.retrieval import (
        Evaluation,
        chosen_ensembles,
        ensemble_choices,
        ensemble_table,
    )

    evaluation = Evaluation(
        scores=None,
        ensemble_weights={2: {"b": 0.25, "a": 0.75}, 1: {"a": 1.0, "b": 0.0}},
        ensemble_hubness_k={1: 5, 2: 0},
    )
    table = ensemble_table(evaluation)
    assert table.to_pylist() == [
        {"fold": 1, "method": "a", "weight": 1.0, "hubness_k": 5},
        {"fold": 1, "method": "b", "weight": 0.0, "hubness_k": 5},
        {"fold": 2, "method": "b", "weight": 0.25, "hubness_k": 0},
        {"fold": 2, "method": "a", "weight": 0.75, "hubness_k": 0},
    ]
    weights, hubness_k = ensemble_choices(table)
    assert weights == evaluation.ensemble_weights and hubness_k == evaluation.ensemble_hubness_k
    assert list(weights[2]) == ["b", "a"]  # the members' order survives
    # what `search_index` reads: each fold's choice, members in the order they were weighed
    chosen = chosen_ensembles(table)
    assert chosen == {
        1: EnsembleChoice({"a": 1.0, "b": 0.0}, 5),
        2: EnsembleChoice({"b": 0.25, "a": 0.75}, 0),
    }
    assert chosen[2].members == ("b", "a")


def test_table_2_is_the_mean_and_sample_std_over_folds_by_hand() -> None:
    import pyarrow as pa

    from formula_assets.evaluation.retrieval import SCORE_SCHEMA, table_2

    def row(fold, method, direction, mrr):
        return {"fold": fold, "method": method, "direction": direction, "recall_at_1": mrr / 2,
                "recall_at_5": mrr, "recall_at_10": 1.0, "mrr": mrr, "candidates": 9}  # fmt: skip

    s2m, m2s = DIRECTIONS
    scores = pa.Table.from_pylist(
        [
            row(1, "graph_text_cl", s2m, 0.2),
            row(2, "graph_text_cl", s2m, 0.4),
            row(3, "graph_text_cl", s2m, 0.9),
            row(1, "mine", s2m, 0.5),
            row(1, "two", m2s, 0.2),
            row(2, "two", m2s, 0.6),
            row(1, "mine", m2s, 0.3),
        ],
        SCORE_SCHEMA,
    )
    out = table_2(scores)
    assert [(r["direction"], r["method"]) for r in out] == [
        (s2m, "graph_text_cl"),
        (s2m, "mine"),
        (m2s, "mine"),
        (m2s, "two"),
    ]
    first = out[0]
    assert first["mrr"] == pytest.approx(0.5)
    assert first["mrr_std"] == pytest.approx(np.sqrt(((0.3**2) + (0.1**2) + (0.4**2)) / 2))
    assert first["recall_at_1"] == pytest.approx(0.25)
    assert first["recall_at_1_std"] == pytest.approx(np.sqrt(((0.15**2) + (0.05**2) + 0.2**2) / 2))
    assert first["recall_at_10"] == 1.0 and first["recall_at_10_std"] == 0.0
    assert first["folds"] == 3 and first["paper"] == (0.238, 0.444, 0.574, 0.345)
    assert out[1]["mrr"] == 0.5 and out[1]["mrr_std"] == 0.0 and out[1]["folds"] == 1
    assert out[1]["paper"] is None
    assert out[2]["mrr"] == pytest.approx(0.3)
    assert out[3]["mrr"] == pytest.approx(0.4) and out[3]["folds"] == 2
    assert out[3]["mrr_std"] == pytest.approx(np.sqrt(2 * 0.2**2))  # two folds: ddof 1


def test_models_that_disagree_on_a_split_are_refused(models) -> None:
    broken = dict(models)
    qids, x, y = models[(0, "beta")].splits["test"]
    splits = dict(models[(0, "beta")].splits)
    splits["test"] = (list(reversed(qids)), x, y)
    broken[(0, "beta")] = Vectors(splits)
    with pytest.raises(ValueError, match="beta used another test split"):
        evaluate(INPUTS, broken, LINEUP)


@pytest.mark.parametrize("size", [0, 1])
def test_a_selection_split_of_fewer_than_two_formulae_is_refused(models, size) -> None:
    small = {}
    for key, model in models.items():
        splits = dict(model.splits)
        qids, x, y = splits["selection"]
        splits["selection"] = (qids[:size], x[:size], y[:size])
        small[key] = Vectors(splits)
    with pytest.raises(ValueError, match=f"have {size} selection formulae"):
        evaluate(INPUTS, small, LINEUP)
    two = {}
    for key, model in models.items():
        splits = dict(model.splits)
        qids, x, y = splits["selection"]
        splits["selection"] = (qids[:2], x[:2], y[:2])
        two[key] = Vectors(splits)
    assert set(evaluate(INPUTS, two, LINEUP).ensemble_weights) == {0}


def test_a_member_without_vectors_is_refused(models) -> None:
    lineup = Lineup(methods=(Lexical(), *MEMBERS), trained=("alpha", "beta"),
                    members=(Lexical(), *MEMBERS))  # fmt: skip
    with pytest.raises(ValueError, match="lexical has no vectors"):
        evaluate(INPUTS, models, lineup)


# The paper's Table 2 (§4.3), the rows of the methods this pipeline reproduces (not the
# MathBERT ones), as printed there: each method's means, then its standard deviations.
PAPER_TEXT = """
Syntactic → Semantic
BM25                              .011 .030 .052 .033
(std ±)                           .003 .005 .010 .003
SBERT Dual Encoder (w/o CL)       .020 .061 .100 .052
(std ±)                           .008 .005 .009 .006
SBERT Dual Encoder (CL)           .224 .450 .556 .334
(std ±)                           .016 .028 .028 .015
Graph–Text Encoder CL             .238 .444 .574 .345
(std ±)                           .014 .014 .014 .011
Semantic → Syntactic
BM25                              .017 .047 .072 .041
(std ±)                           .006 .009 .008 .006
SBERT Dual Encoder (w/o CL)       .082 .201 .280 .149
(std ±)                           .016 .028 .028 .015
SBERT Dual Encoder (CL)           .230 .454 .557 .340
(std ±)                           .010 .014 .012 .009
Graph–Text Encoder CL             .250 .458 .580 .355
(std ±)                           .019 .019 .017 .018
"""
PAPER_NAMES = {
    "BM25": "bm25",
    "SBERT Dual Encoder (w/o CL)": "sbert_no_cl",
    "SBERT Dual Encoder (CL)": "sbert_dual_cl",
    "Graph–Text Encoder CL": "graph_text_cl",
}


def test_the_papers_table_2_is_transcribed_exactly() -> None:
    from formula_assets.evaluation.retrieval import PAPER_TABLE_2

    expected = {}
    direction = None
    method = None
    for line in PAPER_TEXT.strip().splitlines():
        if "→" in line:
            direction = DIRECTIONS[0] if line.startswith("Syntactic") else DIRECTIONS[1]
            continue
        name, *numbers = line.rsplit(maxsplit=4)
        values = tuple(float(n) for n in numbers)
        if name == "(std ±)":
            expected[(method, direction)] = (expected[(method, direction)], values)
        else:
            method = PAPER_NAMES[name]
            expected[(method, direction)] = values
    assert len(expected) == 8
    assert expected == PAPER_TABLE_2
