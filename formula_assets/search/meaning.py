"""The meaning channel: formula → concepts and text → formulae, in the shared space of the
trained models.

The candidates come from the `search_index` asset: every formula's vectors per method and
fold, computed with the models. A query goes through the same encoders and only it is
encoded: a formula is parsed into its OPT (and, for the sentence-vector methods, linearised
and embedded); a text is embedded with the sentence-transformer of the semantic vectors.

Without `method`, the best available one is used: the highest mean MRR in
`retrieval_scores` when it exists, else score_ensemble. Without `fold`, the index's serving
fold answers: the one whose trained models did best on their validation splits. Each hit says
whether that fold's models were trained on the item (it lay in their training folds) or held
out (it lay in their test fold), so memorised answers are not mistaken for generalisation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from upath import UPath

from formula_assets.core import lake
from formula_assets.core.protocol import ENSEMBLE
from formula_assets.evaluation.ensemble import ensemble_inner_product
from formula_assets.evaluation.ranking import normalise_rows
from formula_assets.methods import registry
from formula_assets.methods.base import LoadedModel, TrainedMethod
from formula_assets.search.ann import InnerProductIndex, Ranked
from formula_assets.search.layout import (
    HELD_OUT,
    SEMANTIC,
    STRUCTURAL,
    ServingVectors,
    index_summary,
    serving_vectors,
)
from formula_assets.syntax.mathml import MathMLError, ParseOptions, parse_mathml
from formula_assets.syntax.opt import build_opt_graphs, flatten

if TYPE_CHECKING:
    from formula_assets.graphs.inputs import TokenTexts
    from formula_assets.semantics.models import TextEmbedder


SENTENCE_CACHE = 4096  # query texts whose vectors are kept


class SearchError(RuntimeError):
    """The search cannot run as asked; the message says what to do (`position`: where in the
    query the problem is, when it is at one place)."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position


@dataclass(frozen=True)
class Hit:
    rank: int
    qid: str
    score: float
    label: str | None
    description: str | None
    concepts: list[str] = field(default_factory=list)
    formula: str | None = None
    # the item's split in the serving fold; None for an untrained method (sbert_no_cl)
    split: str | None = None

    @property
    def trained_on(self) -> bool | None:
        """Whether the serving models saw this item in training (None: nothing was trained)."""
        return None if self.split is None else self.split != HELD_OUT


def unbalanced_brace(tex: str) -> int | None:
    """Where a LaTeX string's braces first fail to balance (0-based): a `}` that closes
    nothing, or the first `{` never closed; None when they balance (`\\{` is no brace)."""
    opened: list[int] = []
    escaped = False
    for at, char in enumerate(tex):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "{":
            opened.append(at)
        elif char == "}":
            if not opened:
                return at
            opened.pop()
    return opened[0] if opened else None


def latex_to_mathml(tex: str) -> str:
    """The LaTeX as MathML (latex2mathml, which guesses past an unbalanced brace: refused
    here first, saying where)."""
    from latex2mathml.converter import convert

    at = unbalanced_brace(tex)
    if at is not None:
        what = "closes nothing" if tex[at] == "}" else "is never closed"
        near = tex[max(0, at - 10) : at + 11]
        raise SearchError(f"the LaTeX's {tex[at]} at character {at + 1} {what}: {near}", at)
    try:
        return convert(tex)
    except Exception as exc:  # latex2mathml raises many types (dump.py: tex_to_mathml)
        reason = str(exc) or type(exc).__name__
        raise SearchError(f"the LaTeX did not convert to MathML ({reason}): {tex!r}") from None


def _path(root: UPath, name: str) -> UPath:
    path = root / f"{name}.parquet"
    if not path.exists():
        raise SearchError(
            f"{name} is not materialized in {root}; run `make run` (formula-assets refresh) first"
        )
    return path


def _read(root: UPath, name: str, columns: list[str] | None = None, **where) -> pa.Table:
    """The columns (and rows, `column=values`) a query needs: a cold search reads little."""
    path = _path(root, name)
    try:
        return lake.read_parquet(path, columns, where or None)
    except pa.ArrowInvalid as exc:
        raise SearchError(_unreadable(path, exc)) from None


def _method_vectors(root: UPath, fold: int, method: str) -> ServingVectors | None:
    """One method's vectors of one fold (None: the index has none), read alone: over many
    items, reading every member at once held all of their Arrow tables beside the matrices
    made of them."""
    table = _read(root, "search_index", fold=[fold], method=[method])
    if not table.num_rows:
        return None
    vectors = serving_vectors(table, fold)
    del table
    pa.default_memory_pool().release_unused()  # the table's memory back to the system
    return vectors


def _schema(root: UPath, name: str) -> pa.Schema:
    path = _path(root, name)
    try:
        return lake.read_parquet_schema(path)
    except pa.ArrowInvalid as exc:
        raise SearchError(_unreadable(path, exc)) from None


def _unreadable(path: UPath, exc: Exception) -> str:
    return f"{path} is not a readable Parquet table ({exc}); run `make run` to rebuild it"


class MeaningSearcher:
    def __init__(
        self,
        root: UPath,
        method: str | None = None,
        fold: int | None = None,
        *,
        options: ParseOptions | None = None,
        model_dir: Path | None = None,
        offline: bool = False,
    ) -> None:
        """`options` parse formula queries as the pipeline parsed the corpus; `model_dir` and
        `offline` find the sentence model (the settings of those names)."""
        self.root = root
        self.options = options or ParseOptions()
        self.model_dir = model_dir
        self.offline = offline
        choices = registry.search_methods()
        if method is not None and method not in choices:
            raise SearchError(f"unknown method {method!r}; choose one of {', '.join(choices)}")
        summary = index_summary(_schema(root, "search_index"))
        self.method = method or self._best_method()
        folds = sorted(int(f) for f in summary.get("validation_mrr", {}))
        if fold is not None and fold not in folds:
            raise SearchError(f"the search index has no fold {fold}; it has {folds}")
        try:
            chosen = fold if fold is not None else summary["serving_fold"]
            members = (
                [m.name for m in registry.ensemble_members()]
                if self.method == ENSEMBLE
                else [self.method]
            )
            parts = [_method_vectors(root, chosen, member) for member in members]
            self.index = ServingVectors.merged([p for p in parts if p is not None], chosen)
        except (KeyError, ValueError) as exc:
            raise SearchError(f"the search index is unusable ({exc}); run `make run`") from None
        self.fold = self.index.fold
        self.weights = self.index.weights if self.method == ENSEMBLE else {self.method: 1.0}
        self._items: dict[str, dict] | None = None
        self._linearised: dict[str, str] | None = None
        self.model_name = self.index.summary.get("embedding_model")
        self.model_identity = self.index.summary.get("embedding_model_identity")
        self._models: dict[str, LoadedModel] = {}
        self._embedder: TextEmbedder | None = None
        self._sentences: dict[str, np.ndarray] = {}
        self._splits: dict[str, str] | None = None
        self._spaces: dict[int, InnerProductIndex] = {}
        self._token_table: TokenTexts | None = None

    @property
    def items(self) -> dict[str, dict]:
        """qid → label, description, concepts and LaTeX, read when hits are written."""
        if self._items is None:
            columns = ["qid", "label", "description", "concepts", "tex"]
            rows = _read(self.root, "wikidata_formulae", columns).to_pylist()
            self._items = {r["qid"]: r for r in rows}
        return self._items

    @property
    def linearised(self) -> dict[str, str]:
        """qid → linearised OPT, shown for an item without LaTeX."""
        if self._linearised is None:
            graphs = _read(self.root, "opt_graphs", ["qid", "linearised_opt"])
            self._linearised = dict(
                zip(graphs["qid"].to_pylist(), graphs["linearised_opt"].to_pylist(), strict=True)
            )
        return self._linearised

    # -- choosing --------------------------------------------------------------------------

    def _best_method(self) -> str:
        """The highest mean MRR of Table 2, else the ensemble."""
        path = self.root / "retrieval_scores.parquet"
        if not path.exists():
            return ENSEMBLE
        means: dict[str, list[float]] = {}
        for row in lake.read_parquet(path).to_pylist():
            means.setdefault(row["method"], []).append(row["mrr"])
        choices = registry.search_methods()
        ranked = sorted((m for m in means if m in choices), key=lambda m: -np.mean(means[m]))
        return ranked[0] if ranked else ENSEMBLE

    def model(self, method: str) -> LoadedModel | None:
        """The serving fold's trained model of a method, loaded on first use (query side);
        None for an untrained method."""
        chosen = registry.get(method)
        if not isinstance(chosen, TrainedMethod):
            return None
        if method not in self._models:
            from formula_assets.training.artifacts import model_directory

            try:
                with self._encoding():
                    directory = model_directory(self.root, self.fold, method)
                    self._models[method] = chosen.load(directory)
            except FileNotFoundError:
                message = f"no {method} model for fold {self.fold}; run `make run`"
                raise SearchError(message) from None
        return self._models[method]

    # -- encoding --------------------------------------------------------------------------

    def _encoding(self):
        """The block within which trained models are built and encode queries: a fine-tuned
        encoder's packaged base model is found under `model_dir`."""
        from formula_assets.training.sentence_encoder import frozen_store

        return frozen_store(None, model_dir=self.model_dir)

    def _sentence(self, text: str) -> np.ndarray:
        """The query's sentence vector, computed once per text (the ensemble's members read
        the same linearised OPT): in plain torch where the model's folders allow it (a second
        instead of importing sentence-transformers), else the library."""
        vector = self._sentences.get(text)
        if vector is None:
            vector = self._encode(text)
            self._sentences[text] = vector
            while len(self._sentences) > SENTENCE_CACHE:  # a server sees many texts
                self._sentences.pop(next(iter(self._sentences)))
        return vector

    def _encode(self, text: str) -> np.ndarray:
        if self._embedder is None:
            from formula_assets.semantics.models import (
                EmbeddingModelError,
                TextEmbedder,
                downloaded,
                resolve_model,
            )

            try:
                spec = resolve_model(
                    self.model_name, "the semantic_embeddings asset", self.model_dir
                )
                spec = downloaded(spec, model_dir=self.model_dir, offline=self.offline)
            except EmbeddingModelError as exc:
                raise SearchError(str(exc)) from None
            if self.model_identity and spec.identity != self.model_identity:
                raise SearchError(
                    f"the sentence model {spec.name} is not the one the search index was built "
                    f"with: its files hash to {spec.identity}, the index's vectors were made by "
                    f"{self.model_identity} (was it changed in place?); run `make run` "
                    "(formula-assets refresh) to rebuild the embeddings and the index"
                )
            self._embedder = TextEmbedder(spec, offline=self.offline)
        return self._embedder.encode([text])[0]

    def _structural_query(self, method: str, mathml: str) -> tuple[np.ndarray, np.ndarray]:
        """(query vector, candidate semantic vectors) for a formula query."""
        query = _FormulaQuery(self, mathml)
        model = self.model(method)
        with self._encoding():
            vector = registry.get(method).formula_vector(query, model)
        return vector, self.index.spaces[method][SEMANTIC] if self.index.spaces else None

    def _token_texts(self, graphs: pa.Table) -> TokenTexts:
        """The query's token-text vectors: `opt_token_embeddings` rows, and for a token the
        corpus never had, its text embedded now (as the asset would have)."""
        from formula_assets.graphs.inputs import TokenTexts

        if self._token_table is None:
            self._token_table = TokenTexts.from_table(_read(self.root, "opt_token_embeddings"))
        known_tokens = self._token_table
        known = dict(zip(known_tokens.tokens, known_tokens.vectors, strict=True))
        tokens = sorted({t for ts in graphs.column("node_tokens").to_pylist() for t in ts})
        vectors = [known[t] if t in known else self._sentence(t) for t in tokens]
        return TokenTexts(tokens, np.stack(vectors).astype(np.float32))

    def _semantic_query(self, method: str, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(query vector, candidate structural vectors) for a text query."""
        model = self.model(method)
        with self._encoding():
            vector = registry.get(method).text_vector(_TextQuery(self, text), model)
        return vector, self.index.spaces[method][STRUCTURAL] if self.index.spaces else None

    def _scoring(self) -> list[tuple[str, float]]:
        """The members that count, with their weights (a member weighed 0 is not encoded)."""
        if self.method != ENSEMBLE:
            return [(self.method, 1.0)]
        return [(m, w) for m, w in self.weights.items() if w]

    def _space(self, side: int) -> InnerProductIndex:
        """The candidates of one side as Table 2's ensemble scores them, one inner product
        per query (`evaluation.ensemble.ensemble_inner_product`)."""
        if side not in self._spaces:
            weights = dict(self._scoring())
            hubness = None
            if self.method == ENSEMBLE:
                hubness = {m: self.index.hubness[m][side] for m in weights}
            spaces = {m: self.index.spaces[m][side] for m in weights}
            matrix, bias = ensemble_inner_product(weights, spaces, hubness)
            self._spaces[side] = InnerProductIndex(matrix, bias)
        return self._spaces[side]

    def compact(self) -> None:
        """Build both sides' scoring matrices now and let the index's own vectors go: a
        long-running service over many items holds each vector once."""
        for side in (STRUCTURAL, SEMANTIC):
            self._space(side)
            for method, pair in self.index.spaces.items():  # this side's copies go now
                self.index.spaces[method] = tuple(
                    None if i == side else v for i, v in enumerate(pair)
                )
        self.index.spaces.clear()
        self.index.hubness.clear()
        pa.default_memory_pool().release_unused()  # the vectors may have been Arrow's memory

    def _query(self, encode, side: int) -> tuple[InnerProductIndex, np.ndarray]:
        """The candidates of `side` and the query's vector against them: the inner product
        is the cosine per member weighed and hubness-corrected as Table 2's ensemble scores
        (over many items, the approximate search's: `search.ann`; unread ones -inf)."""
        space = self._space(side)
        query = [normalise_rows(encode(m)[0][None, :])[0] for m, _ in self._scoring()]
        return space, np.concatenate(query)

    def query_in_space(self, query: str, kind: str) -> tuple[InnerProductIndex, np.ndarray]:
        """The candidates' index a query is scored against and its vector there (`kind`:
        "text", or "mathml" for a formula): what `benchmarks.ann_recall` compares."""
        if kind == "text":
            text = " ".join(query.split())
            return self._query(lambda m: self._semantic_query(m, text), STRUCTURAL)
        return self._query(lambda m: self._structural_query(m, query), SEMANTIC)

    # -- queries ---------------------------------------------------------------------------

    @property
    def trained(self) -> bool:
        """Whether any of the serving methods was trained (its hits have a split)."""
        return any(registry.get(m).trained for m in self.weights)

    def split_of(self, qid: str) -> str | None:
        """The item's split in the serving fold (None: not in the index, or nothing trained)."""
        if not self.trained:
            return None
        if self._splits is None:
            self._splits = dict(zip(self.index.qids, self.index.splits, strict=True))
        return self._splits.get(qid)

    def formula_scores(self, mathml: str) -> np.ndarray:
        """Every indexed item's score (`index.qids` order) for a formula: how well its
        semantics match the formula's structure."""
        space, query = self._formula_query(mathml)
        return space.dense(query).astype(np.float64)

    def text_scores(self, text: str) -> np.ndarray:
        """Every indexed item's score for a description: how well its formula matches it."""
        space, query = self._text_query(text)
        return space.dense(query).astype(np.float64)

    def formula_candidates(self, mathml: str) -> Ranked:
        """The items a formula's search reads (all of them up to `ann.EXACT_UP_TO`, else the
        inverted file's probed clusters: a service over many items fills no array of all)."""
        space, query = self._formula_query(mathml)
        return space.search(query)

    def text_candidates(self, text: str) -> Ranked:
        """The same for a description."""
        space, query = self._text_query(text)
        return space.search(query)

    def _formula_query(self, mathml: str) -> tuple[InnerProductIndex, np.ndarray]:
        try:
            parse_mathml(mathml, self.options)
        except MathMLError as exc:
            raise SearchError(f"the formula does not parse: {exc.reason}") from None
        return self._query(lambda m: self._structural_query(m, mathml), SEMANTIC)

    def _text_query(self, text: str) -> tuple[InnerProductIndex, np.ndarray]:
        text = " ".join(text.split())
        if not text:
            raise SearchError("the text query is empty")
        return self._query(lambda m: self._semantic_query(m, text), STRUCTURAL)

    def sentence(self, text: str) -> np.ndarray:
        """A text's sentence vector by the model the index was built with (made once)."""
        return self._sentence(" ".join(text.split()))

    def formula_to_concepts(self, mathml: str, top: int = 10) -> list[Hit]:
        """The Wikidata items whose semantics best match a formula's structure."""
        return self._hits(self.formula_scores(mathml), top)

    def text_to_formulae(self, text: str, top: int = 10) -> list[Hit]:
        """The formulae whose structure best matches a description."""
        return self._hits(self.text_scores(text), top)

    def _hits(self, scores: np.ndarray, top: int) -> list[Hit]:
        qids = self.index.qids
        trained = any(registry.get(m).trained for m in self.weights)
        order = np.argsort(-scores, kind="stable")[:top]
        hits = []
        for rank, index in enumerate(order, start=1):
            qid = qids[index]
            item = self.items.get(qid, {})
            hits.append(
                Hit(
                    rank=rank,
                    qid=qid,
                    score=float(scores[index]),
                    label=item.get("label"),
                    description=item.get("description"),
                    concepts=sorted({c["label"] for c in item.get("concepts") or [] if c["label"]}),
                    formula=item.get("tex") or self.linearised.get(qid),
                    split=self.index.splits[index] if trained else None,
                )
            )
        return hits


class _FormulaQuery:
    """A formula query as the methods read it (`methods.base.FormulaQuery`): its linearised
    OPT's sentence vector, its graph and its tokens' vectors, each made once when asked."""

    def __init__(self, searcher: MeaningSearcher, mathml: str) -> None:
        self.searcher = searcher
        self.mathml = mathml

    def linearised(self) -> str:
        return flatten(parse_mathml(self.mathml, self.searcher.options)).linearised

    def linearised_vector(self) -> np.ndarray:
        return self.searcher._sentence(self.linearised())

    def graphs(self) -> pa.Table:
        return build_opt_graphs([("query", self.mathml)], self.searcher.options).graphs

    def token_texts(self, graphs: pa.Table) -> TokenTexts:
        return self.searcher._token_texts(graphs)


class _TextQuery:
    """A text query as the methods read it (`methods.base.TextQuery`): the text, and its
    sentence vector made once when asked."""

    def __init__(self, searcher: MeaningSearcher, text: str) -> None:
        self.searcher = searcher
        self.text = text

    def vector(self) -> np.ndarray:
        return self.searcher._sentence(self.text)
