"""How well each annotated concept fits its formula, and the concepts an annotation may lack.

The vocabulary is every concept annotated on some item of the corpus. Each concept's own
annotation (its label and description, as `semantic_embeddings` aggregates texts, or as one
text for a method that reads text) is mapped by each fold model's semantic side
(`Method.text_vectors`); the formula's association with a concept is the cosine of its
structural vector to that concept vector, weighted over the ensemble's members with the fold's
weights.

* Concept fit: the percentile of an annotated concept among the whole vocabulary by that
  association (0: the formula's most associated concept, 1: its least). The suspicion of an
  item is the mean of its concepts' percentiles averaged with the worst one: a concept set
  taken from another formula has high percentiles throughout, one wrong concept has one.
* Missing concepts: the `SHORTLIST` concepts the formula is most associated with, less those
  the item has, ordered by how close each concept's sentence vector lies to the item's own
  annotation vector (a concept of this formula that fits what the item is about).

Both were chosen on the folds' validation splits (docs/audit.md), never on a test fold.

The symbol: the formula's identifiers (the lettered symbol tokens of its operator tree) that
no annotated concept's symbol (qualifier P7235, `symbol_mathml`) covers are unannotated; a
suggested concept names one of them when the corpus uses it as that concept's symbol.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from formula_assets.methods import registry
from formula_assets.methods.base import LoadedModel
from formula_assets.search.layout import ServingVectors
from formula_assets.semantics.annotations import annotation_texts
from formula_assets.semantics.texts import annotation_text
from formula_assets.syntax.mathml import MathMLError, parse_mathml
from formula_assets.syntax.schema import SYMBOL

SHORTLIST = 30  # the formula's most associated concepts a suggestion is drawn from
SUGGESTED = 10  # concepts kept per item, best first

# text → sentence vector (as `semantic_embeddings` embedded it)
TextVectors = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Concept:
    qid: str
    label: str | None
    description: str | None
    symbols: frozenset[str]  # identifiers the corpus annotates with this concept
    uses: int  # items annotated with it


@dataclass(frozen=True)
class Suggestion:
    qid: str
    label: str | None
    score: float  # closeness to the item's annotation (cosine of sentence vectors)
    symbol: str | None


def vocabulary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Concept]:
    """Every concept of the corpus, in first-seen order, with its symbols and use count."""
    first: dict[str, Mapping[str, Any]] = {}
    symbols: dict[str, set[str]] = {}
    uses: Counter[str] = Counter()
    for row in rows:
        for concept in row.get("concepts") or []:
            qid = concept.get("qid")
            if not qid:
                continue
            first.setdefault(qid, concept)
            symbols.setdefault(qid, set()).update(identifiers(concept.get("symbol_mathml")))
            uses[qid] += 1
    return {
        qid: Concept(qid, c.get("label"), c.get("description"), frozenset(symbols[qid]), uses[qid])
        for qid, c in first.items()
    }


def identifiers(mathml: str | None) -> list[str]:
    """The distinct identifiers of a MathML string (its operator tree's symbol tokens with a
    letter in them, so not numbers), in tree order; none for markup that does not parse."""
    return list(_identifiers(mathml)) if mathml else []


@functools.lru_cache(maxsize=1 << 16)
def _identifiers(mathml: str) -> tuple[str, ...]:
    """Parsed once per distinct markup: the audit reads each declared symbol for the
    vocabulary and again for every item that declares it (22,251 parses of 3,586 distinct
    strings on the snapshot)."""
    try:
        root = parse_mathml(mathml)
    except MathMLError:
        return ()
    seen: dict[str, None] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == SYMBOL and any(ch.isalpha() for ch in node.token):
            seen.setdefault(node.token, None)
        stack.extend(reversed(node.children))
    return tuple(seen)


def unannotated_symbols(row: Mapping[str, Any]) -> list[str]:
    """The formula's identifiers that none of its concepts' symbols covers."""
    annotated = {s for c in row.get("concepts") or [] for s in identifiers(c.get("symbol_mathml"))}
    return [s for s in identifiers(row.get("mathml")) if s not in annotated]


def corpus_texts(rows: Sequence[Mapping[str, Any]], concepts: Mapping[str, Concept]) -> list[str]:
    """Every text an audit embeds: the items' annotation texts and the concepts' own."""
    texts = [t for row in rows for t in annotation_texts(row)]
    texts += [t for c in concepts.values() for t in concept_texts(c)]
    return list(dict.fromkeys(texts))


def concept_texts(concept: Concept) -> list[str]:
    return annotation_texts({"label": concept.label, "description": concept.description})


def annotation_vector(texts: Sequence[str], vectors: TextVectors, aggregation: str) -> np.ndarray:
    """An annotation's sentence vector from its texts, as `semantics.tables` aggregates them."""
    if not texts:
        raise ValueError("an annotation without texts has no vector")
    total = np.sum([np.asarray(vectors[t], dtype=np.float64) for t in texts], axis=0)
    if aggregation == "mean":
        total /= len(texts)
    return total.astype(np.float32)


def with_concepts(row: Mapping[str, Any], concepts: Sequence[Mapping[str, Any]]) -> dict:
    """The item with other concepts (the corruptions and suggestions edit only these)."""
    return {**row, "concepts": list(concepts)}


def concept_entry(concept: Concept) -> dict[str, Any]:
    return {"qid": concept.qid, "label": concept.label, "description": concept.description}


@dataclass(frozen=True)
class AnnotationQuery:
    """An annotation (its texts) as a method reads a text query (`methods.base.TextQuery`):
    one text for a model that reads text, the aggregated sentence vector for the others."""

    texts: tuple[str, ...]
    vectors: TextVectors
    aggregation: str

    @property
    def text(self) -> str:
        return annotation_text(self.texts)

    def vector(self) -> np.ndarray:
        return annotation_vector(self.texts, self.vectors, self.aggregation)


def semantic_side(
    queries: Sequence[AnnotationQuery],
    models: Mapping[str, LoadedModel | None],
    methods: Sequence[str],
) -> dict[str, np.ndarray]:
    """Annotations (rows) in each method's space (its semantic side)."""
    return {
        name: (
            np.asarray(registry.get(name).text_vectors(queries, models.get(name)))
            if len(queries)
            else np.zeros((0, 0), np.float32)
        )
        for name in methods
    }


class ConceptSense:
    """How well a concept's sense fits an item's field, against the item's own concepts: the
    cosine of the concept's sentence vector to the item's label and description, over the
    mean cosine of the item's annotated concepts (1 where it fits as well as they do, capped;
    1 for an item without concepts to compare with). "duration" on a matrix identity is far
    below that item's own concepts; "temperature difference" on the Grashof number is not."""

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        concepts: Mapping[str, Concept],
        texts: TextVectors,
        aggregation: str,
    ) -> None:
        self.texts = texts
        self.aggregation = aggregation
        self.items = {row["qid"]: row for row in rows}
        self.concepts = concepts
        self._unit: dict[tuple[str, str], np.ndarray | None] = {}

    def _vector(self, kind: str, qid: str) -> np.ndarray | None:
        key = (kind, qid)
        if key not in self._unit:
            if kind == "item":
                row = self.items.get(qid) or {}
                own = annotation_texts(
                    {"label": row.get("label"), "description": row.get("description")}
                )
            else:
                concept = self.concepts.get(qid)
                own = concept_texts(concept) if concept is not None else []
            own = [t for t in own if t in self.texts]
            vector = annotation_vector(own, self.texts, self.aggregation) if own else None
            if vector is not None:
                vector = vector.astype(np.float64) / max(float(np.linalg.norm(vector)), 1e-12)
            self._unit[key] = vector
        return self._unit[key]

    def __call__(self, item: str, concept: str) -> float:
        at, candidate = self._vector("item", item), self._vector("concept", concept)
        if at is None or candidate is None:
            return 1.0
        own = [
            float(v @ at)
            for c in (self.items.get(item) or {}).get("concepts") or ()
            if c.get("qid") != item and (v := self._vector("concept", c.get("qid"))) is not None
        ]
        usual = float(np.mean(own)) if own else 0.0
        if usual <= 0.0:
            return 1.0
        return float(np.clip(float(candidate @ at) / usual, 0.0, 1.0))


class ConceptSuggester:
    """Concept fit and missing-concept suggestions for the held-out items of one fold."""

    def __init__(
        self,
        vectors: ServingVectors,
        models: Mapping[str, LoadedModel | None],
        concepts: Mapping[str, Concept],
        texts: TextVectors,
        aggregation: str,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        """`weights`: the members weighed (default: the fold's ensemble; one method alone
        for a baseline)."""
        self.vectors = vectors
        self.concepts = concepts
        self.texts = texts
        self.aggregation = aggregation
        self.weights = dict(weights if weights is not None else vectors.weights)
        self.members = [m for m, w in self.weights.items() if w]
        self.order = list(concepts)
        queries = [
            AnnotationQuery(tuple(concept_texts(concepts[q])), texts, aggregation)
            for q in self.order
        ]
        own = np.stack([q.vector() for q in queries])
        self.position = {q: i for i, q in enumerate(self.order)}
        # the concepts' sentence vectors, unit length (closeness to an item's annotation)
        self.concept_inputs = np.asarray(own, dtype=np.float64) / np.maximum(
            np.linalg.norm(own, axis=1, keepdims=True), 1e-12
        )
        spaces = semantic_side(queries, models, self.members)
        # the concepts' own vectors, unit length, per member: the shortlist's space
        self.concept_space = {
            m: np.asarray(spaces[m], dtype=np.float64)
            / np.maximum(np.linalg.norm(spaces[m], axis=1, keepdims=True), 1e-12)
            for m in self.members
        }

    def association(self, rows: Sequence[int]) -> np.ndarray:
        """rows × vocabulary: the cosine of each item's formula to each concept's own vector,
        weighted as the ensemble weighs its members (the shortlist's order)."""
        total = np.zeros((len(rows), len(self.order)))
        for m in self.members:
            formulae = np.asarray(self.vectors.spaces[m][0][list(rows)], dtype=np.float64)
            formulae /= np.maximum(np.linalg.norm(formulae, axis=1, keepdims=True), 1e-12)
            total += self.weights[m] * (formulae @ self.concept_space[m].T)
        return total

    def shortlist(
        self, association: np.ndarray, exclude: set[str], size: int = SHORTLIST
    ) -> list[str]:
        """The concepts closest to the formula (one row of `association`), less `exclude`."""
        ranked = np.argsort(-association, kind="stable")[: size + len(exclude)]
        return [self.order[i] for i in ranked if self.order[i] not in exclude][:size]

    def concept_fit(
        self, rows: Sequence[int], items: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, float]]:
        """Per item: each annotated concept's percentile among the vocabulary by the
        formula's association (0 best, 1 worst)."""
        association = self.association(rows)
        position = {q: i for i, q in enumerate(self.order)}
        out = []
        for n, item in enumerate(items):
            fit = {}
            for concept in item.get("concepts") or []:
                at = position.get(concept.get("qid"))
                if at is not None:
                    fit[concept["qid"]] = float(
                        (association[n] > association[n][at]).sum() / max(len(self.order) - 1, 1)
                    )
            out.append(fit)
        return out

    def suggest(
        self, rows: Sequence[int], items: Sequence[Mapping[str, Any]], top: int = SUGGESTED
    ) -> list[list[Suggestion]]:
        """Per item (at its row of the fold): the concepts of the formula's shortlist that it
        lacks, closest to its own annotation first."""
        association = self.association(rows)
        out = []
        for n, item in enumerate(items):
            present = {c.get("qid") for c in item.get("concepts") or []}
            own_texts = annotation_texts(item)
            if not own_texts:
                out.append([])
                continue
            candidates = self.shortlist(association[n], present)
            own = annotation_vector(own_texts, self.texts, self.aggregation).astype(np.float64)
            own /= max(np.linalg.norm(own), 1e-12)
            closeness = [float(self.concept_inputs[self.position[q]] @ own) for q in candidates]
            free = set(unannotated_symbols(item))
            order = np.argsort(-np.asarray(closeness), kind="stable")[:top]
            out.append(
                [
                    Suggestion(
                        qid,
                        self.concepts[qid].label,
                        closeness[i],
                        next((s for s in sorted(self.concepts[qid].symbols) if s in free), None),
                    )
                    for i in order
                    for qid in [candidates[i]]
                ]
            )
        return out


def suspicion(fit: Mapping[str, float]) -> float | None:
    """½ (mean + worst) of an item's concept percentiles; None without concepts."""
    if not fit:
        return None
    values = list(fit.values())
    return (float(np.mean(values)) + max(values)) / 2
