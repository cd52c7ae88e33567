"""The structure channel: a formula query against every item's formula, on canonical trees.

The index (`structure_index`, built from `opt_graphs`) holds each formula's keys
(`syntax.structure_keys`). A query's keys are looked up, each lookup a binary search in a
sorted column, and its features scored against every formula in one sparse product, so the
cost grows with the matches, not with a pairwise comparison of trees. The score is a tier
(how much of the formula matches exactly) plus the near-match similarity (TF-IDF cosine of
the features, in [0, 1]), so exact and near-exact matches come first:

| tier | the query … |
|---|---|
| +4 | is the formula, identifiers renamed, operands or sides in another order (same pattern) |
| +1 | … and with the same names |
| +3.5 | is it but for signs (`F = −kx` for `F = kx`), +1 with the same names |
| +3 | is one link of its chain, or it is one link of the query's |
| +2 × share | is a part of it (one side, a term), weighted by the query's share of its size |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from scipy import sparse

from formula_assets.core.postings import posting_sum
from formula_assets.syntax.canonical import TooDeep, canonical_of_opt, identifier
from formula_assets.syntax.mathml import MathMLError, ParseOptions, parse_mathml
from formula_assets.syntax.opt import trees
from formula_assets.syntax.structure_keys import MIN_PART_SIZE, StructureKeys, structure_keys

SAME_PATTERN, SAME_NAMES, SAME_BUT_SIGNS, SAME_LINK, PART = 4.0, 1.0, 3.5, 3.0, 2.0
EXACT = SAME_PATTERN  # a score at least this: the same formula up to the variants above

ANNOTATION = pa.struct(
    [("concept", pa.string()), ("label", pa.string()), ("identifier", pa.string())]
)
STRUCTURE_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("pattern", pa.int64()),
        ("named", pa.int64()),
        ("loose", pa.int64()),
        ("loose_named", pa.int64()),
        ("links", pa.list_(pa.int64())),
        ("parts", pa.list_(pa.int64())),
        ("feature_keys", pa.list_(pa.int64())),
        ("feature_counts", pa.list_(pa.int32())),
        ("size", pa.int32()),
        ("identifiers", pa.list_(pa.string())),  # the names of v1, v2, … of `pattern`
        # the item's annotations: each concept with the identifier its symbol is (null: the
        # symbol is an expression, or did not parse); a concept listed twice, once
        ("annotations", pa.list_(ANNOTATION)),
    ]
)


def annotations(
    concepts: Sequence[Mapping[str, Any]] | None, options: ParseOptions
) -> list[dict[str, str | None]]:
    """An item's concepts with the identifier each one's symbol is (None where the symbol is
    an expression or does not parse); a concept listed twice, once."""
    out: dict[tuple[str | None, str | None], dict[str, str | None]] = {}
    for concept in concepts or ():
        mathml = concept.get("symbol_mathml")
        name = None
        if mathml and mathml.strip():
            try:
                name = identifier(parse_mathml(mathml, options))
            except (MathMLError, TooDeep):
                name = None
        key = (concept.get("qid"), name)
        out.setdefault(
            key, {"concept": concept.get("qid"), "label": concept.get("label"), "identifier": name}
        )
    return list(out.values())


def structure_table(graphs: pa.Table, formulae: pa.Table, options: ParseOptions) -> pa.Table:
    """One row of keys per parsed formula of `opt_graphs`, with the item's annotations (the
    symbols parsed with the formulae's `options`)."""
    concepts = dict(
        zip(
            formulae.column("qid").to_pylist(),
            formulae.column("concepts").to_pylist(),
            strict=True,
        )
    )
    rows: dict[str, list] = {name: [] for name in STRUCTURE_SCHEMA.names}
    for qid, root in trees(graphs):
        try:
            keys = structure_keys(canonical_of_opt(root))
        except TooDeep:  # not comparable by structure; names and meaning still find it
            continue
        rows["qid"].append(qid)
        rows["pattern"].append(keys.pattern)
        rows["named"].append(keys.named)
        rows["loose"].append(keys.loose)
        rows["loose_named"].append(keys.loose_named)
        rows["links"].append(list(keys.links))
        rows["parts"].append(list(keys.parts))
        rows["feature_keys"].append(list(keys.features))
        rows["feature_counts"].append(list(keys.features.values()))
        rows["size"].append(keys.size)
        rows["identifiers"].append(list(keys.identifiers))
        rows["annotations"].append(annotations(concepts.get(qid), options))
    return pa.Table.from_pydict(rows, schema=STRUCTURE_SCHEMA)


class _Lookup:
    """Rows by key: the keys sorted, each with its row; a lookup is two binary searches."""

    def __init__(self, keys: np.ndarray, rows: np.ndarray) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys, self.rows = keys[order], rows[order]

    def __call__(self, key: int) -> np.ndarray:
        lo = np.searchsorted(self.keys, key, side="left")
        hi = np.searchsorted(self.keys, key, side="right")
        return self.rows[lo:hi]


def _listed(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A list column as (values, row of each value)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = array.offsets.to_numpy()
    values = array.values.to_numpy(zero_copy_only=False)[offsets[0] : offsets[-1]]
    rows = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    return values.astype(np.int64), rows


@dataclass(frozen=True)
class StructureScores:
    scores: np.ndarray
    exact: np.ndarray  # bool: the same formula as the query up to renaming and order
    named: np.ndarray  # bool: … and with the same names


class StructureIndex:
    def __init__(self, table: pa.Table) -> None:
        self.qids: list[str] = table.column("qid").to_pylist()
        n = len(self.qids)
        rows = np.arange(n)
        self.pattern = table.column("pattern").to_numpy()
        self.sizes = table.column("size").to_numpy().astype(np.float64)
        self.identifiers: list[list[str]] = table.column("identifiers").to_pylist()
        self._pattern = _Lookup(self.pattern, rows)
        self._named = _Lookup(table.column("named").to_numpy(), rows)
        self._loose = _Lookup(table.column("loose").to_numpy(), rows)
        self._loose_named = _Lookup(table.column("loose_named").to_numpy(), rows)
        self._links = _Lookup(*_listed(table.column("links")))
        self._parts = _Lookup(*_listed(table.column("parts")))
        keys, key_rows = _listed(table.column("feature_keys"))
        counts, _ = _listed(table.column("feature_counts"))
        self.features, columns = np.unique(keys, return_inverse=True)
        matrix = sparse.csr_matrix(
            (counts.astype(np.float64), (key_rows, columns)), shape=(n, len(self.features))
        )
        documents = np.bincount(columns, minlength=len(self.features))
        self.idf = np.log1p(n / np.maximum(documents, 1))
        weighted = matrix.multiply(self.idf[None, :]).tocsr()
        norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel())
        unit = sparse.diags(1.0 / np.maximum(norms, 1e-12)) @ weighted
        self.postings = unit.T.tocsr()  # feature → its formulae' unit TF-IDF weights

    def __len__(self) -> int:
        return len(self.qids)

    def similarity(self, keys: StructureKeys) -> np.ndarray:
        """TF-IDF cosine of the query's features with every formula's; a feature no formula
        has weighs as the rarest do (it makes the query less like all of them)."""
        if not keys.features or not len(self.features):
            return np.zeros(len(self))
        query = np.fromiter(keys.features, dtype=np.int64)
        counts = np.fromiter(keys.features.values(), dtype=np.float64)
        at = np.minimum(np.searchsorted(self.features, query), len(self.features) - 1)
        known = self.features[at] == query
        idf = np.where(known, self.idf[at], np.log1p(len(self)))
        weights = counts * idf
        norm = np.sqrt(weights @ weights)
        return posting_sum(self.postings, at[known], weights[known] / norm)

    def score(self, keys: StructureKeys) -> StructureScores:
        scores = self.similarity(keys)
        same = self._pattern(keys.pattern)
        scores[same] += SAME_PATTERN
        scores[self._named(keys.named)] += SAME_NAMES
        loose = np.setdiff1d(self._loose(keys.loose), same)
        scores[loose] += SAME_BUT_SIGNS
        scores[np.intersect1d(self._loose_named(keys.loose_named), loose)] += SAME_NAMES
        linked = np.union1d(
            self._links(keys.pattern),
            np.concatenate([self._pattern(link) for link in keys.links] or [np.array([], int)]),
        )
        scores[np.setdiff1d(linked, same)] += SAME_LINK
        if keys.size >= MIN_PART_SIZE:
            parts = np.setdiff1d(self._parts(keys.pattern), same)
            scores[parts] += PART * np.minimum(keys.size / self.sizes[parts], 1.0)
        exact = np.zeros(len(self), dtype=bool)
        exact[same] = True
        named = np.zeros(len(self), dtype=bool)
        named[np.intersect1d(self._named(keys.named), same)] = True
        return StructureScores(scores, exact, named)


def query_keys(mathml: str, options: ParseOptions) -> StructureKeys:
    """A formula query's keys (a `MathMLError` when it does not parse)."""
    return structure_keys(canonical_of_opt(parse_mathml(mathml, options)))


def variant_quality(
    index: StructureIndex, formulae: pa.Table, options: ParseOptions
) -> dict[str, dict[str, float]]:
    """The structure channel's ranks of every item for variants of its own formula."""
    from formula_assets.search.quality import evaluate, summary
    from formula_assets.search.variants import VARIANTS
    from formula_assets.syntax.writer import to_mathml

    rows = {qid: i for i, qid in enumerate(index.qids)}

    def queries():
        for qid, mathml in zip(
            formulae.column("qid").to_pylist(), formulae.column("mathml").to_pylist(), strict=True
        ):
            row = rows.get(qid)
            if row is None or not mathml:
                continue
            tree = parse_mathml(mathml, options)
            alike = np.flatnonzero(index.pattern == index.pattern[row])
            for kind, make in VARIANTS.items():
                variant = make(tree, row)
                if variant is not None:
                    query = query_keys(to_mathml(variant), options)
                    yield kind, row, alike, lambda q=query: index.score(q).scores

    return summary(evaluate(queries()))
