"""Search as people ask: a text or a formula, answered from three channels fused into one list.

* **names** (`search.names`): a text against each item's label, aliases and description;
* **structure** (`search.structure`): a formula against each item's formula, on canonical
  trees (renaming, operand order and sides do not matter; a part or one link still matches);
* **meaning** (`search.meaning`): the trained models — a text against the items' formulae,
  a formula against the items' concept annotations.

A text query asks names and meaning, a formula (LaTeX or MathML) structure and meaning;
`search.fusion` makes one list. Each hit says which channels found it, at what rank, and, for
the meaning channel, whether its models were trained on the item. A formula query also gets
each identifier's likely meaning (`search.explain`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from upath import UPath

from formula_assets.core import lake
from formula_assets.search.ann import Ranked
from formula_assets.search.catalogue import WIKIDATA, Catalogue
from formula_assets.search.explain import SymbolExplanation, aligned_items, explain_symbols
from formula_assets.search.fusion import (
    CHANNELS,
    MEANING,
    NAMES,
    STRUCTURE,
    ChannelRank,
    ChannelScores,
    FusionWeights,
    fuse,
)
from formula_assets.search.layout import HELD_OUT
from formula_assets.search.meaning import MeaningSearcher, SearchError, latex_to_mathml
from formula_assets.search.names import NAME_COLUMNS, NameIndex
from formula_assets.search.structure import (
    STRUCTURE_SCHEMA,
    StructureIndex,
    StructureScores,
    query_keys,
)
from formula_assets.syntax.canonical import TooDeep
from formula_assets.syntax.mathml import MathMLError, ParseOptions
from formula_assets.syntax.structure_keys import StructureKeys

TEXT, LATEX, MATHML = "text", "latex", "mathml"
KINDS = (TEXT, LATEX, MATHML)
CHANNELS_OF = {TEXT: (NAMES, MEANING), LATEX: (STRUCTURE, MEANING), MATHML: (STRUCTURE, MEANING)}
# the longest query of each kind (the snapshot's longest formula: 7,546 characters of MathML)
MAX_QUERY_CHARS = {TEXT: 1_000, LATEX: 4_000, MATHML: 100_000}
MAX_TOP = 100

__all__ = ["KINDS", "Hit", "SearchError", "SearchResult", "Searcher"]


@dataclass(frozen=True)
class Concept:
    qid: str
    label: str | None
    symbol: str | None  # the identifier its symbol is in the formula (the item's page: MathML)


@dataclass(frozen=True)
class Hit:
    rank: int
    qid: str
    score: float
    label: str | None
    description: str | None
    aliases: list[str]
    mathml: str | None
    concepts: list[Concept]
    channels: dict[str, ChannelRank]
    # the item's split in the meaning channel's fold (None: it did not rank the item, or its
    # method is not trained)
    split: str | None = None

    @property
    def trained_on(self) -> bool | None:
        return None if self.split is None else self.split != HELD_OUT

    @property
    def url(self) -> str:
        return WIKIDATA + self.qid

    def as_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "qid": self.qid,
            "url": self.url,
            "score": round(self.score, 6),
            "label": self.label,
            "description": self.description,
            "aliases": self.aliases,
            "mathml": self.mathml,
            "concepts": [
                {"qid": c.qid, "label": c.label, "symbol": c.symbol} for c in self.concepts
            ],
            "channels": {
                name: {"rank": c.rank, "score": round(c.score, 6), "exact": c.exact}
                for name, c in self.channels.items()
            },
            "trained_on": self.trained_on,
        }


@dataclass
class SearchResult:
    query: str
    kind: str
    channels: tuple[str, ...]
    hits: list[Hit]
    mathml: str | None = None  # a formula query as MathML
    symbols: list[SymbolExplanation] = field(default_factory=list)
    meaning: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "kind": self.kind,
            "mathml": self.mathml,
            "channels": list(self.channels),
            "meaning": self.meaning,
            "hits": [h.as_json() for h in self.hits],
            "symbols": [
                {
                    "identifier": s.identifier,
                    "annotated_in_corpus": s.corpus_count,
                    "readings": [
                        {
                            "concept": r.concept,
                            "label": r.label,
                            "score": r.score,
                            "evidence": r.evidence,
                            "items": list(r.items),
                        }
                        for r in s.readings
                    ],
                }
                for s in self.symbols
            ],
        }


def _table(root: UPath, name: str, columns: Iterable[str] = ()) -> pa.Table:
    """A table of the lake, with the `columns` search reads of it."""
    path = root / f"{name}.parquet"
    if not path.exists():
        raise SearchError(
            f"{name} is not materialized in {root}; run `make run` (formula-assets refresh) first"
        )
    try:
        table = lake.read_parquet(path)
    except pa.ArrowInvalid as exc:
        raise SearchError(
            f"{path} is not a readable Parquet table ({exc}); run `make run` to rebuild it"
        ) from None
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise SearchError(
            f"{path} has no {', '.join(missing)}: an earlier version built it; run "
            "`formula-assets refresh` to rebuild it"
        )
    return table


def _qids(table: pa.Table) -> list[str]:
    return table.column("qid").to_pylist()


def _known_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    known = rows >= 0
    return (rows, None) if known.all() else (rows[known], known)


class Searcher:
    """Loads the indexes once; each `search` encodes only its query."""

    def __init__(
        self,
        root: UPath,
        method: str | None = None,
        fold: int | None = None,
        *,
        options: ParseOptions | None = None,
        model_dir: Path | None = None,
        offline: bool = False,
        fusion: FusionWeights | None = None,
        channels: Iterable[str] = CHANNELS,
        compact: bool = False,
    ) -> None:
        """`compact`: keep only what queries read (a service; not for inspecting scores)."""
        self.root = root
        self.options = options or ParseOptions()
        self.fusion = fusion or FusionWeights()
        self.channels = tuple(c for c in CHANNELS if c in set(channels))
        # each until its index is built from it (then dropped: a service keeps the index only)
        self._tables = {
            STRUCTURE: _table(root, "structure_index", STRUCTURE_SCHEMA.names),
            NAMES: _table(root, "name_index", NAME_COLUMNS),
        }
        self._qids = {name: _qids(table) for name, table in self._tables.items()}
        self.catalogue = Catalogue.from_tables(
            _table(root, "wikidata_formulae"), self._tables[STRUCTURE]
        )
        self.meaning = MeaningSearcher(
            root, method, fold, options=self.options, model_dir=model_dir, offline=offline
        )
        if compact:  # a service indexes both channels before its first query
            self.meaning.compact()
            _ = self.structure, self.names
        self._rows = {  # per channel: its items' catalogue rows (-1: not in the catalogue)
            STRUCTURE: self.catalogue.rows(self._qids[STRUCTURE]),
            NAMES: self.catalogue.rows(self._qids[NAMES]),
            MEANING: self.catalogue.rows(self.meaning.index.qids),
        }
        self._known = {name: _known_rows(rows) for name, rows in self._rows.items()}
        self._use: dict[str, Counter[str]] | None = None
        self._labels: dict[str, str] | None = None

    # a text query needs no structure index, a formula query no name index: each is built
    # on first use, so one query in a fresh process builds only its own
    @cached_property
    def structure(self) -> StructureIndex:
        return StructureIndex(self._tables.pop(STRUCTURE))

    @cached_property
    def names(self) -> NameIndex:
        return NameIndex(self._tables.pop(NAMES))

    def disagreement(self) -> str | None:
        """Why the tables loaded do not describe one set of items, if they do not: the name
        index must hold exactly the formula items, the structure and meaning indexes only
        items among them (a table the pipeline has not yet rebuilt after items changed)."""
        items = set(self.catalogue.qids)
        if set(self._qids[NAMES]) != items:
            return "the name index holds other items than wikidata_formulae"
        for name, qids in (
            ("structure", self._qids[STRUCTURE]),
            ("search", self.meaning.index.qids),
        ):
            stray = set(qids) - items
            if stray:
                return f"the {name} index holds {len(stray)} item(s) wikidata_formulae lacks"
        return None

    # -- the channels ----------------------------------------------------------------------

    def _channel(self, name: str, scores: np.ndarray, exact: np.ndarray | None) -> ChannelScores:
        rows, known = self._known[name]
        if known is None:  # every item of the channel's index is in the catalogue
            return ChannelScores(rows, scores, exact)
        return ChannelScores(rows, scores[known], None if exact is None else exact[known])

    def _read(self, found: Ranked) -> ChannelScores:
        """The meaning channel's scores of the items its search read."""
        rows = self._rows[MEANING][found.rows]
        known = rows >= 0
        return ChannelScores(rows[known], found.scores[known].astype(np.float64))

    def _text_channels(self, text: str) -> dict[str, ChannelScores]:
        out: dict[str, ChannelScores] = {}
        if NAMES in self.channels:  # the sentence vector is made once, for both channels
            found = self.names.score(text, self.meaning.sentence(text))
            out[NAMES] = self._channel(NAMES, found.scores, found.exact)
        if MEANING in self.channels:
            out[MEANING] = self._read(self.meaning.text_candidates(text))
        return out

    def _formula_channels(self, mathml: str):
        try:
            keys = query_keys(mathml, self.options)
        except MathMLError as exc:
            raise SearchError(f"the formula does not parse: {exc.reason}") from None
        except TooDeep as exc:
            raise SearchError(str(exc)) from None
        out: dict[str, ChannelScores] = {}
        found = self.structure.score(keys)
        if STRUCTURE in self.channels:  # exact: the very formula, names included
            out[STRUCTURE] = self._channel(STRUCTURE, found.scores, found.named)
        if MEANING in self.channels:
            out[MEANING] = self._read(self.meaning.formula_candidates(mathml))
        return out, keys, found

    # -- one query -------------------------------------------------------------------------

    def search(self, query: str, kind: str = TEXT, top: int = 10) -> SearchResult:
        if kind not in KINDS:
            raise SearchError(f"unknown query kind {kind!r}; choose one of {', '.join(KINDS)}")
        if not 1 <= top <= MAX_TOP:
            raise SearchError(f"top must be between 1 and {MAX_TOP}, not {top}")
        if len(query) > MAX_QUERY_CHARS[kind]:
            raise SearchError(
                f"the query is longer than {MAX_QUERY_CHARS[kind]:,} characters ({kind})"
            )
        text = " ".join(query.split())
        if not text:
            raise SearchError("the query is empty")
        mathml = None
        symbols: list[SymbolExplanation] = []
        if kind == TEXT:
            channels = self._text_channels(text)
            fused = fuse(channels, self.fusion)
        else:
            mathml = latex_to_mathml(query) if kind == LATEX else query
            channels, keys, found = self._formula_channels(mathml)
            fused = fuse(channels, self.fusion)
            symbols = self.explain(keys, found, [f.row for f in fused])
        hits = [self._hit(rank, f) for rank, f in enumerate(fused[:top], start=1)]
        return SearchResult(
            query, kind, tuple(channels), hits, mathml, symbols, self._meaning_note()
        )

    def explain(
        self,
        keys: StructureKeys,
        found: StructureScores,
        fused_rows: list[int],
        exclude: int | None = None,
        use: Mapping[str, Counter[str]] | None = None,
    ) -> list[SymbolExplanation]:
        """Each identifier's readings: aligned with the items of the query's pattern (by
        structure score), the items found, and the corpus counts (`use`, default all items';
        `exclude`: an item whose own annotations must not count)."""
        if self._use is None:
            self._use = self.catalogue.symbol_use()
            self._labels = self.catalogue.concept_labels()
        use = self._use if use is None else use
        aligned = aligned_items(found, self._rows[STRUCTURE], self.structure.identifiers)
        return explain_symbols(
            keys.identifiers, aligned, fused_rows, self.catalogue, use, self._labels or {}, exclude
        )

    def _meaning_note(self) -> dict[str, Any]:
        meaning = self.meaning
        return {
            "method": meaning.method,
            "fold": meaning.fold,
            "weights": meaning.weights,
        }

    def _hit(self, rank: int, fused) -> Hit:
        row = fused.row
        catalogue = self.catalogue
        concepts = [
            Concept(a.concept, a.label, a.identifier) for a in catalogue.annotations[row]
        ] or [Concept(c.get("qid"), c.get("label"), None) for c in catalogue.concepts[row]]
        split = self.meaning.split_of(catalogue.qids[row])
        return Hit(
            rank=rank,
            qid=catalogue.qids[row],
            score=fused.score,
            label=catalogue.labels[row],
            description=catalogue.descriptions[row],
            aliases=list(catalogue.aliases[row]),
            mathml=catalogue.mathml[row],
            concepts=concepts,
            channels=fused.channels,
            split=split,
        )
