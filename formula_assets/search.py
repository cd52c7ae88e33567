"""Formula → concepts and text → formulae, in the shared space of the trained models.

The searcher reads what the pipeline materialized in the data lake: the formula items, the
frozen sentence vectors, and the trained fold models (whose stored vectors of every formula
are the candidates). A query goes through the same encoders: a formula is parsed into its
OPT (and, for the sentence-vector methods, linearised and embedded); a text is embedded with
the sentence-transformer that built the semantic vectors.

Without `method`, the best available one is used: the highest mean MRR in
`retrieval_scores` when it exists, else the first available of score_ensemble,
sbert_dual_cl, graph_text_cl, sbert_no_cl. The fold model with the best validation MRR
serves; the ensemble's weights are chosen on that fold's validation split, as in evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from upath import UPath

from formula_assets.core import lake
from formula_assets.core.arrow import embedding_matrix, recorded_model, vectors
from formula_assets.core.protocol import ENSEMBLE, FOLDS, TRAINED
from formula_assets.evaluation.ranking import CosineScorer
from formula_assets.evaluation.table2 import ensemble_scorer, fold_ensemble_weights
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.syntax.mathml import MathMLError, parse_mathml
from formula_assets.syntax.opt import build_opt_graphs, flatten

METHODS = (ENSEMBLE, "sbert_dual_cl", "graph_text_cl", "sbert_no_cl")


class SearchError(RuntimeError):
    """The search cannot run as asked; the message says what to do."""


@dataclass(frozen=True)
class Hit:
    rank: int
    qid: str
    score: float
    label: str | None
    description: str | None
    concepts: list[str] = field(default_factory=list)
    formula: str | None = None


def latex_to_mathml(tex: str) -> str:
    from latex2mathml.converter import convert

    try:
        return convert(tex)
    except Exception as exc:
        reason = str(exc) or type(exc).__name__
        raise SearchError(f"the LaTeX did not convert to MathML ({reason}): {tex!r}") from None


def _read(root: UPath, name: str) -> pa.Table:
    path = root / f"{name}.parquet"
    if not path.exists():
        raise SearchError(
            f"{name} is not materialized in {root}; run `make run` (formula-assets refresh) first"
        )
    return lake.read_parquet(path)


class Searcher:
    def __init__(self, root: UPath, method: str | None = None, fold: int | None = None) -> None:
        self.root = root
        formulae = _read(root, "wikidata_formulae")
        self.items = {r["qid"]: r for r in formulae.to_pylist()}
        graphs = _read(root, "opt_graphs")
        self.linearised = dict(
            zip(graphs["qid"].to_pylist(), graphs["linearised_opt"].to_pylist(), strict=True)
        )
        semantic = _read(root, "semantic_embeddings")
        self._frozen_semantic = dict(zip(*embedding_matrix(semantic), strict=True))
        self._frozen_opt = dict(
            zip(*embedding_matrix(_read(root, "opt_text_embeddings")), strict=True)
        )
        self.model_name = recorded_model(semantic)
        self.available = self._available_models()
        self.method = self._choose_method(method)
        self.fold = self._choose_fold(fold)
        self.models = {m: self._load(m) for m in self._members()}
        self.weights = self._weights()
        self._embedder = None

    # -- choosing --------------------------------------------------------------------------

    def _available_models(self) -> dict[str, dict[int, float]]:
        """method → fold → best validation MRR, for every trained model in the lake."""
        import json

        from formula_assets.training.artifacts import CONFIG, current_version

        out: dict[str, dict[int, float]] = {}
        base = self.root / "fold_models"
        for method in TRAINED:
            for fold in FOLDS:
                directory = base / str(fold) / method
                try:
                    config = json.loads((current_version(directory) / CONFIG).read_bytes())
                except (FileNotFoundError, OSError, ValueError):
                    continue
                out.setdefault(method, {})[fold] = float(config.get("best_validation_mrr", 0.0))
        return out

    def _choose_method(self, method: str | None) -> str:
        usable = [m for m in METHODS if self._usable(m)]
        if method is not None:
            if method not in METHODS:
                raise SearchError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
            if method not in usable:
                raise SearchError(
                    f"no trained {method} model is materialized yet; run `make run` "
                    "(formula-assets refresh), or pick another --method"
                )
            return method
        ranking = self._ranking_from_scores()
        for candidate in ranking + [m for m in METHODS if m not in ranking]:
            if candidate in usable:
                return candidate
        raise SearchError("nothing to search with")  # sbert_no_cl is always usable

    def _usable(self, method: str) -> bool:
        if method == "sbert_no_cl":
            return True
        if method == ENSEMBLE:
            folds = set(self.available.get(TRAINED[0], {})) & set(
                self.available.get(TRAINED[1], {})
            )
            return bool(folds)
        return bool(self.available.get(method))

    def _ranking_from_scores(self) -> list[str]:
        path = self.root / "retrieval_scores.parquet"
        if not path.exists():
            return []
        scores = lake.read_parquet(path).to_pylist()
        means: dict[str, list[float]] = {}
        for row in scores:
            means.setdefault(row["method"], []).append(row["mrr"])
        return sorted((m for m in means if m in METHODS), key=lambda m: -float(np.mean(means[m])))

    def _members(self) -> tuple[str, ...]:
        if self.method == ENSEMBLE:
            return TRAINED
        return (self.method,) if self.method in TRAINED else ()

    def _choose_fold(self, fold: int | None) -> int | None:
        members = self._members()
        if not members:
            return None
        folds = set.intersection(*(set(self.available.get(m, {})) for m in members))
        if fold is not None:
            if fold not in folds:
                raise SearchError(f"no {' and '.join(members)} model for fold {fold}")
            return fold
        return max(sorted(folds), key=lambda f: sum(self.available[m][f] for m in members))

    def _load(self, method: str) -> dict[str, Any]:
        from formula_assets.training.artifacts import load_model
        from formula_assets.training.methods import build_model

        trained = load_model(self.root / "fold_models" / str(self.fold) / method)
        module = build_model(trained.config)
        module.load_state_dict(trained.state)
        module.eval()
        table = trained.embeddings
        qids = table["qid"].to_pylist()
        width = table.schema.field("structural").type.list_size
        return {
            "trained": trained,
            "module": module,
            "qids": qids,
            "structural": vectors(table["structural"], width),
            "semantic": vectors(table["semantic"], width),
            "splits": table["split"].to_pylist(),
        }

    def _weights(self) -> dict[str, float]:
        """The ensemble's weights, chosen on the serving fold's validation split as in Table 2."""
        if self.method != ENSEMBLE:
            return {self.method: 1.0}
        models = {m: self.models[m]["trained"] for m in TRAINED}
        return fold_ensemble_weights(models, self._frozen_opt, self._frozen_semantic)

    # -- encoding --------------------------------------------------------------------------

    @property
    def embedder(self):
        if self._embedder is None:
            from formula_assets.semantics.models import TextEmbedder, resolve_model

            self._embedder = TextEmbedder(
                resolve_model(self.model_name, "the semantic_embeddings asset")
            )
        return self._embedder

    def _sentence(self, text: str) -> np.ndarray:
        return self.embedder.encode([text])[0]

    def _candidates(self) -> list[str]:
        if self.models:
            return self.models[self._members()[0]]["qids"]
        return [q for q in self._frozen_semantic if q in self._frozen_opt]

    def _structural_query(self, method: str, mathml: str) -> tuple[np.ndarray, np.ndarray]:
        """(query vector, candidate semantic vectors) for a formula query."""
        import torch

        linearised = flatten(parse_mathml(mathml)).linearised
        if method == "sbert_no_cl":
            candidates = np.stack([self._frozen_semantic[q] for q in self._candidates()])
            return self._sentence(linearised), candidates
        model = self.models[method]
        with torch.no_grad():
            if method == "graph_text_cl":
                from formula_assets.training.methods import GraphInputs

                graphs = build_opt_graphs([("query", mathml)]).graphs
                vocabulary = TokenVocabulary.from_tokens(model["trained"].config["vocabulary"])
                batch = GraphInputs(graphs, vocabulary, "cpu").batch(np.array([0]))
                query = model["module"].encode_structural(batch)[0].numpy()
            else:
                x = torch.from_numpy(self._sentence(linearised)[None, :])
                query = model["module"].encode_structural(x)[0].numpy()
        return query, model["semantic"]

    def _semantic_query(self, method: str, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(query vector, candidate structural vectors) for a text query."""
        import torch

        vector = self._sentence(text)
        if method == "sbert_no_cl":
            return vector, np.stack([self._frozen_opt[q] for q in self._candidates()])
        model = self.models[method]
        with torch.no_grad():
            query = model["module"].encode_semantic(torch.from_numpy(vector[None, :]))[0].numpy()
        return query, model["structural"]

    def _scores(self, encode) -> np.ndarray:
        """Cosine of the query against every candidate per member, weighted as in Table 2."""
        members = {}
        for member in self.weights:
            query, candidates = encode(member)
            members[member] = CosineScorer(query[None, :], candidates)
        scorer = (
            ensemble_scorer(self.weights, members)
            if self.method == ENSEMBLE
            else members[self.method]
        )
        return scorer.block(np.array([0]))[0]

    # -- queries ---------------------------------------------------------------------------

    def formula_to_concepts(self, mathml: str, top: int = 10) -> list[Hit]:
        """The Wikidata items whose semantics best match a formula's structure."""
        try:
            parse_mathml(mathml)
        except MathMLError as exc:
            raise SearchError(f"the formula does not parse: {exc.reason}") from None
        return self._hits(self._scores(lambda m: self._structural_query(m, mathml)), top)

    def text_to_formulae(self, text: str, top: int = 10) -> list[Hit]:
        """The formulae whose structure best matches a description."""
        text = " ".join(text.split())
        if not text:
            raise SearchError("the text query is empty")
        return self._hits(self._scores(lambda m: self._semantic_query(m, text)), top)

    def _hits(self, scores: np.ndarray, top: int) -> list[Hit]:
        qids = self._candidates()
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
                )
            )
        return hits
