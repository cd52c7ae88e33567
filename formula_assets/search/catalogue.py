"""The items search answers with: one row each, in one order every channel maps into.

Read from `wikidata_formulae` (label, description, aliases, the formula's MathML, concepts,
whether it has several defining formulae) and the annotations of `structure_index` (each
concept with the identifier its symbol is).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

WIKIDATA = "https://www.wikidata.org/wiki/"
ITEM_COLUMNS = [
    "qid",
    "label",
    "description",
    "aliases",
    "mathml",
    "concepts",
    "other_formulae",
    "repeated_concepts",
]


@dataclass(frozen=True)
class Annotation:
    concept: str
    label: str | None
    identifier: str | None


@dataclass
class Catalogue:
    qids: list[str]
    labels: list[str | None]
    descriptions: list[str | None]
    aliases: list[list[str]]
    mathml: list[str | None]
    concepts: list[list[dict]]
    annotations: list[list[Annotation]] = field(default_factory=list)
    # whether the item has defining formulae besides `mathml`, its concepts possibly theirs
    several_formulae: list[bool] = field(default_factory=list)
    # the MathML of those further formulae where the source stores them (not the snapshot)
    other_formulae: list[list[str]] = field(default_factory=list)
    _rows: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_tables(cls, formulae: pa.Table, structure: pa.Table | None = None) -> Catalogue:
        columns = {
            name: formulae.column(name).to_pylist() if name in formulae.column_names else None
            for name in ITEM_COLUMNS
        }
        qids = columns["qid"] or []
        n = len(qids)
        concepts = [c or [] for c in (columns["concepts"] or [[]] * n)]
        catalogue = cls(
            qids=qids,
            labels=columns["label"] or [None] * n,
            descriptions=columns["description"] or [None] * n,
            aliases=[a or [] for a in (columns["aliases"] or [[]] * n)],
            mathml=columns["mathml"] or [None] * n,
            concepts=concepts,
            annotations=[[] for _ in range(n)],
            several_formulae=_several_formulae(columns, concepts),
            other_formulae=[o or [] for o in (columns["other_formulae"] or [[]] * n)],
        )
        catalogue._rows = {q: i for i, q in enumerate(qids)}
        if structure is not None:
            for qid, listed in zip(
                structure.column("qid").to_pylist(),
                structure.column("annotations").to_pylist(),
                strict=True,
            ):
                row = catalogue._rows.get(qid)
                if row is not None:
                    catalogue.annotations[row] = [
                        Annotation(a["concept"], a["label"], a["identifier"]) for a in listed or ()
                    ]
        return catalogue

    def __len__(self) -> int:
        return len(self.qids)

    def row(self, qid: str) -> int | None:
        return self._rows.get(qid)

    def rows(self, qids: list[str]) -> np.ndarray:
        """Catalogue rows of `qids` (-1 for an item the catalogue lacks)."""
        return np.array([self._rows.get(q, -1) for q in qids], dtype=np.int64)

    def concepts_of(self, identifier: str, row: int) -> list[Annotation]:
        return [a for a in self.annotations[row] if a.identifier == identifier]

    def symbol_use(self, exclude: int | None = None) -> dict[str, Counter[str]]:
        """identifier → how many items annotate it with each concept (one item once)."""
        use: dict[str, Counter[str]] = defaultdict(Counter)
        for row, listed in enumerate(self.annotations):
            if row == exclude:
                continue
            for pair in {(a.identifier, a.concept) for a in listed if a.identifier}:
                use[pair[0]][pair[1]] += 1
        return use

    def use_without(
        self, use: Mapping[str, Counter[str]], row: int, identifiers: Iterable[str]
    ) -> dict[str, Counter[str]]:
        """`use` (`symbol_use`) for `identifiers` with the item at `row` left out: its own
        annotations hidden, as leaving one out needs, without counting the corpus again."""
        own = {(a.identifier, a.concept) for a in self.annotations[row]}
        return {
            name: use.get(name, Counter()) - Counter({c: 1 for i, c in own if i == name})
            for name in identifiers
        }

    def concept_labels(self) -> dict[str, str]:
        labels: dict[str, str] = {}
        for listed in self.annotations:
            for a in listed:
                if a.label and a.concept not in labels:
                    labels[a.concept] = a.label
        return labels


def _several_formulae(columns: Mapping[str, list | None], concepts: list[list[dict]]) -> list[bool]:
    """Per item, whether it has further defining formulae: stored in `other_formulae`, or told
    by the concepts the reader dropped as repeats (the snapshot states an item's concepts once
    per formula but keeps one formula). A table stored before those columns existed still holds
    the repeats themselves."""
    others = columns["other_formulae"] or [None] * len(concepts)
    repeated = columns["repeated_concepts"] or [_repeats(c) for c in concepts]
    return [bool(o) or bool(r) for o, r in zip(others, repeated, strict=True)]


def _repeats(concepts: list[dict]) -> int:
    """How often a concept is listed again with the same known symbol."""
    pairs = [(c.get("qid"), c.get("symbol_mathml")) for c in concepts if c.get("symbol_mathml")]
    return len(pairs) - len(set(pairs))
