"""The names channel: a text query against each item's label, aliases and description.

People write names their own way: lower case, without diacritics (`Schrodinger`), without
apostrophes or with the possessive dropped (`Ohms law`, `Ohm law`), with a hyphen for an en
dash (`Stefan-Boltzmann`). `terms` brings a text and a query to the same words: Unicode
compatibility forms folded, diacritics removed, lower case, dashes and slashes split words,
apostrophes vanish, a word's plural or possessive `s` is dropped, and an ordinal written in
digits is spelt (`2nd` → `second`). The names are matched in these ways, each scored over all
items:

* BM25 over the names (label and aliases) and, apart, over the description (a description
  says more words, each weaker); a query's word matches a name also as its acronym: the
  initials of a run of two or more of the name's words, function words skipped (`KL` and
  `KLD` of `Kullback–Leibler divergence`, `RMS`, `BMI`, `FTC` of `fundamental theorem of
  calculus`), so `KL divergence` covers the whole name, and a name's full acronym typed
  alone (`bmi`) is an exact match unless it is also a word of some name (`pi`);
* BM25 over the character trigrams of the names' words, for spellings that differ by a
  letter or two (`Pythagoras` / `Pythagorean`, `Schroedinger`);
* BM25 over the item's formulae read aloud (`syntax.spoken`: `h bar`, `kinetic energy E k
  equals one half times mass m times speed v squared`), for a query that says a formula or
  a symbol in words;
* the sentence model's cosine between the query and each item's text — its names, its
  description and the labels of the concepts its formula is annotated with — for a query that
  describes rather than names (`force equals mass times acceleration`).

Each lexical match is scaled to the share of the query it covers (its score over the most the
query could score: `Bm25Index.ceiling`), so that a name sharing one word of a long description
(`logarithm` of `negative logarithm of the hydrogen ion concentration`) stays weak.

An item's names are its label, its aliases and the title of its English Wikipedia article
(without a parenthesised qualifier: `Density` for mass density, `Mole fraction` for
amount-of-substance fraction). A query whose words are exactly one of them is an exact name
match.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

import numpy as np
import pyarrow as pa

from formula_assets.core.arrow import embedding_table, vectors
from formula_assets.evaluation.bm25 import Bm25Index
from formula_assets.evaluation.ranking import normalise_rows
from formula_assets.search.ann import InnerProductIndex
from formula_assets.search.structure import annotations
from formula_assets.syntax.mathml import ParseOptions
from formula_assets.syntax.opt import trees
from formula_assets.syntax.spoken import spoken_of_opt

_DASHES = re.compile(r"[\u2010-\u2015\u2212\-/_]")
_APOSTROPHES = re.compile(r"['\u2018\u2019\u02bc\u0060\u00b4]")
_POSSESSIVE = re.compile(r"['\u2019\u02bc]s\b")
_WORD = re.compile(r"\w+")
# one or two digits: the ordinals spelt (a longer number is never converted, however long)
_ORDINAL = re.compile(r"(?<![\w.,])(\d{1,2})(?:st|nd|rd|th)\b")
_ORDINALS = dict(enumerate((
    "first", "second", "third", "fourth", "fifth", "sixth",
    "seventh", "eighth", "ninth", "tenth", "eleventh", "twelfth",
), start=1))  # fmt: skip
# left out of an acronym's letters (`FTC`: fundamental theorem of calculus)
_FUNCTION_WORDS = frozenset((
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to",
    "with",
))  # fmt: skip
# never an acronym: words a query says for themselves (`what is …`, `law of …`)
_NOT_ACRONYMS = _FUNCTION_WORDS | frozenset((
    "am", "be", "do", "go", "he", "if", "is", "it", "me", "my", "no", "so", "up", "us", "we",
    "how", "who", "why", "law", "sum",
))  # fmt: skip
_LONGEST_ACRONYM = 6


def _stem(word: str) -> str:
    """A plural or possessive `s` dropped (`laws`, `ohms`, `newtons`), `ies` → `y`."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us")):
        return word[:-1]
    return word


def terms(text: str | None) -> list[str]:
    """The words of a name or query as they are compared."""
    if not text:
        return []
    folded = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in folded if not unicodedata.combining(c))
    plain = _POSSESSIVE.sub("", _DASHES.sub(" ", plain.casefold()))
    plain = _ORDINAL.sub(_spelt, plain)
    return [_stem(w) for w in _WORD.findall(_APOSTROPHES.sub("", plain))]


def _spelt(match: re.Match[str]) -> str:
    return _ORDINALS.get(int(match.group(1)), match.group(0))


def _initials(words: Sequence[str]) -> list[str]:
    return [w[0] for w in words if w not in _FUNCTION_WORDS and w[0].isalpha()]


def acronym(words: Sequence[str]) -> str | None:
    """A name's own acronym, typed alone an exact match (`body mass index` → `bmi`)."""
    letters = _stem("".join(_initials(words)))  # as a query's word is stemmed
    if 2 <= len(letters) <= _LONGEST_ACRONYM and letters not in _NOT_ACRONYMS:
        return letters
    return None


def acronyms(words: Sequence[str]) -> list[str]:
    """The initials of every run of two or more of a name's words, function words skipped
    (`kullback leibler divergence` → `kl`, `ld`, `kld`)."""
    letters = _initials(words)
    out: list[str] = []
    for length in range(2, min(len(letters), _LONGEST_ACRONYM) + 1):
        for start in range(len(letters) - length + 1):
            out.append(_stem("".join(letters[start : start + length])))
    return [a for a in out if a not in _NOT_ACRONYMS]


def trigrams(words: Sequence[str]) -> list[str]:
    """Each word's character trigrams, its ends marked: `ohm` → `#oh`, `ohm`, `hm#`."""
    out: list[str] = []
    for word in words:
        padded = f"#{word}#"
        out.extend(padded[i : i + 3] for i in range(len(padded) - 2))
    return out


_QUALIFIER = re.compile(r"\s*\([^)]*\)$")


def article_title(url: str | None) -> str | None:
    """The title of an English Wikipedia article from its URL, without a trailing
    parenthesised qualifier (`…/wiki/Power_(physics)` → `Power`)."""
    if not url or "/wiki/" not in url:
        return None
    title = unquote(url.rsplit("/wiki/", 1)[1]).replace("_", " ").strip()
    return _QUALIFIER.sub("", title) or None


def names_of(label: str | None, aliases: Sequence[str], enwiki: str | None) -> list[str]:
    """An item's names, each once (by the words they compare as), label first."""
    out: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for name in (label, *aliases, article_title(enwiki)):
        words = tuple(terms(name))
        if name and words and words not in seen:
            seen.add(words)
            out.append(name)
    return out


def name_text(names: Sequence[str], description: str | None, concepts: Sequence[str]) -> str:
    """What the sentence model reads of an item: its names, description and concepts."""
    text = ", ".join(names)
    if description:
        text += f": {description}"
    if concepts:
        text += "; " + ", ".join(concepts)
    return text


@dataclass(frozen=True, kw_only=True)
class NameWeights:
    """How the names channel weighs its matches (the lexical ones as shares of the query
    covered, the dense one a cosine); chosen on the tuning part of the hand-written queries."""

    names: float = 0.1
    description: float = 0.3
    trigrams: float = 0.1
    spoken: float = 0.3
    dense: float = 1.0


# what `NameIndex` reads of a `name_table`
NAME_COLUMNS = ("qid", "names", "description", "spoken", "embedding")


@dataclass(frozen=True)
class NameScores:
    scores: np.ndarray
    exact: np.ndarray  # bool: the query is one of an item's names


class NameIndex:
    """The lexical and dense name indexes of every item, in `qids` order."""

    def __init__(self, table: pa.Table) -> None:
        self.qids: list[str] = table.column("qid").to_pylist()
        descriptions = table.column("description").to_pylist()
        names = [[terms(n) for n in forms or ()] for forms in table.column("names").to_pylist()]
        self._exact: dict[tuple[str, ...], list[int]] = {}
        for row, forms in enumerate(names):
            for form in forms:
                if form:
                    self._exact.setdefault(tuple(form), []).append(row)
        flat = [[w for form in forms for w in form] for forms in names]
        self.names = Bm25Index(flat)
        self.acronyms = Bm25Index([[a for f in forms for a in acronyms(f)] for forms in names])
        for row, forms in enumerate(names):
            for form in forms:
                whole = acronym(form)
                # typed alone, an acronym that is no name's word is exact (`bmi`; not `pi`)
                if whole and whole not in self.names.vocabulary:
                    self._exact.setdefault((whole,), []).append(row)
        self.description = Bm25Index([terms(d) for d in descriptions])
        self.trigrams = Bm25Index([trigrams(words) for words in flat])
        spoken = table.column("spoken").to_pylist()
        self.spoken = Bm25Index(
            [[w for said in forms or () for w in terms(said)] for forms in spoken]
        )
        column = table.column("embedding")
        # unit rows once, so a query's cosines are one product (approximate over many items)
        self.dense = InnerProductIndex(normalise_rows(vectors(column, column.type.list_size)))

    def __len__(self) -> int:
        return len(self.qids)

    def _names(self, words: Sequence[str]) -> tuple[np.ndarray, float]:
        """The names' BM25, each word matched as a word or as initials, and its ceiling: each
        word at its best either way (a word neither holds, the rarest name word)."""
        scores = self.names.scores(words)
        scores += self.acronyms.scores(words)
        rarest = self.names.rarest()
        ceiling = sum(
            rarest if a is None and b is None else max(a or 0.0, b or 0.0)
            for a, b in zip(self.names.best(words), self.acronyms.best(words), strict=True)
        )
        # an item matching a word both ways scores no more than the whole query at its best
        np.minimum(scores, ceiling, out=scores)
        return scores, ceiling

    @staticmethod
    def _add_share(total: np.ndarray, weight: float, scores: np.ndarray, ceiling: float) -> None:
        """`scores` as shares of the query covered: every word at its best adds `weight`."""
        if ceiling > 0:
            scores *= weight / ceiling
            total += scores

    def score(
        self, query: str, vector: np.ndarray | None, weights: NameWeights = NameWeights()
    ) -> NameScores:
        """Every item's names score for a query (`vector`: its sentence vector, or None)."""
        words = terms(query)
        # summed in place: over many items each array of every item costs its page faults
        total = np.zeros(len(self.qids))
        if weights.names:
            self._add_share(total, weights.names, *self._names(words))
        for weight, index, query_terms in (
            (weights.description, self.description, words),
            (weights.trigrams, self.trigrams, trigrams(words)),
            (weights.spoken, self.spoken, words),
        ):
            if weight:
                scores, ceiling = index.scores(query_terms), index.ceiling(query_terms)
                self._add_share(total, weight, scores, ceiling)
        if vector is not None and weights.dense and len(self.dense):
            unit = vector / max(float(np.linalg.norm(vector)), 1e-12)
            found = self.dense.search(unit)  # the rows it read; the others add nothing
            total[found.rows] += weights.dense * np.clip(found.scores, 0.0, None)
        exact = np.zeros(len(self.qids), dtype=bool)
        exact[self._exact.get(tuple(words), [])] = True
        return NameScores(total, exact)


def spoken_forms(
    graphs: pa.Table, formulae: pa.Table, options: ParseOptions
) -> dict[str, list[str]]:
    """Each item's formulae of `opt_graphs` read aloud, an identifier said also as the label
    of the concept the item annotates it with (`mass m`; the symbols parsed with `options`)."""
    concepts = dict(
        zip(
            formulae.column("qid").to_pylist(), formulae.column("concepts").to_pylist(), strict=True
        )
    )
    labels: dict[str, dict[str, str]] = {}
    out: dict[str, list[str]] = {}
    for qid, root in trees(graphs):
        if qid not in labels:
            found = annotations(concepts.get(qid), options)
            # an identifier two concepts annotate is said as the first
            labels[qid] = {
                a["identifier"]: a["label"]
                for a in reversed(found)
                if a["identifier"] and a["label"]
            }
        said = spoken_of_opt(root, labels[qid])
        if said:
            out.setdefault(qid, []).append(said)
    return out


def name_table(
    formulae: pa.Table,
    embed: Callable[[list[str]], np.ndarray],
    spoken: Mapping[str, Sequence[str]],
) -> pa.Table:
    """Every item's names, its formulae read aloud (`spoken_forms`) and the sentence vector
    of its `name_text` (`embed`: texts → matrix, the caller's model and cache)."""
    rows = formulae.select(
        [c for c in ("qid", "label", "description", "aliases", "enwiki", "concepts")
         if c in formulae.column_names]
    ).to_pylist()  # fmt: skip
    names = [names_of(r["label"], r.get("aliases") or [], r.get("enwiki")) for r in rows]
    concepts = [
        sorted({c["label"] for c in r.get("concepts") or () if c.get("label")}) for r in rows
    ]
    texts = [
        name_text(forms, r["description"], labels)
        for forms, r, labels in zip(names, rows, concepts, strict=True)
    ]
    return embedding_table(
        [r["qid"] for r in rows],
        np.asarray(embed(texts), dtype=np.float32),
        label=pa.array([r["label"] for r in rows], pa.string()),
        names=pa.array(names, pa.list_(pa.string())),
        description=pa.array([r["description"] for r in rows], pa.string()),
        name_text=pa.array(texts, pa.string()),
        spoken=pa.array([list(spoken.get(r["qid"], ())) for r in rows], pa.list_(pa.string())),
    )


def as_people_type(name: str) -> str:
    """A name as people often type it: lower case, no diacritics, no apostrophes or
    possessive `s`, a hyphen for a dash (`Schrödinger's cat` → `schrodinger cat`)."""
    folded = unicodedata.normalize("NFKD", name)
    plain = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    plain = _POSSESSIVE.sub("", plain)
    return _DASHES.sub("-", _APOSTROPHES.sub("", plain))


def name_quality(index: NameIndex, labels: Sequence[str | None]) -> dict[str, dict[str, float]]:
    """The names channel's ranks of every item for its label as people type it (lexical
    matches only: the dense one needs the model; an exact name first, as fusion puts it);
    items of the same name count alike."""
    from formula_assets.search.quality import evaluate, summary

    same: dict[tuple[str, ...], list[int]] = {}
    for row, label in enumerate(labels):
        same.setdefault(tuple(terms(label)), []).append(row)

    def queries():
        for row, label in enumerate(labels):
            if label:
                query = as_people_type(label)
                alike = np.array(same[tuple(terms(label))])
                yield "label", row, alike, lambda q=query: _exact_first(index.score(q, None))

    return summary(evaluate(queries()))


def _exact_first(found: NameScores) -> np.ndarray:
    return found.scores + found.exact * (1.0 + found.scores.max(initial=0.0))
