"""The searcher over a small lake written here (an index of the frozen sentence vectors; one
test adds a small graph model): every score is computed again from the stored vectors and the
query's vectors, hits carry their items, and each way a search cannot run is one clear error.
The tests over a materialized pipeline with trained models are in test_meaning.py."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from upath import UPath

from formula_assets.core.protocol import ENSEMBLE
from formula_assets.graphs.inputs import TokenTexts
from formula_assets.methods.graph_text_cl import METHOD
from formula_assets.search.layout import INDEX_SCHEMA, METADATA_KEY
from formula_assets.search.meaning import Hit, MeaningSearcher, SearchError, latex_to_mathml
from formula_assets.semantics.bert import BertSentenceEncoder
from formula_assets.semantics.models import packaged_default_path, resolve_model
from formula_assets.syntax.mathml import parse_mathml
from formula_assets.syntax.opt import build_opt_graphs, flatten
from formula_assets.training.artifacts import TrainedModel, model_directory, save_model
from formula_assets.training.data import AlignmentData
from formula_assets.training.inputs import FoldRows
from formula_assets_tests.methods.test_graph_text_cl import graph_description

FROZEN = "sbert_no_cl"
TRAINED = "graph_text_cl"
QIDS = [f"Q{i}" for i in range(1, 13)]  # more than the default top 10
WIDTH = 384  # all-MiniLM-L6-v2
MATHML = "<math><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></math>"
ITEMS = [
    {
        "qid": "Q1",
        "label": "mass–energy",
        "description": "E equals m c squared",
        "concepts": [{"label": "mass"}, {"label": "energy"}, {"label": None}],
        "tex": "E=mc^2",
    },
    {"qid": "Q2", "label": "kinetic energy", "description": None, "concepts": None, "tex": None},
    {"qid": "Q3", "label": None, "description": None, "concepts": [], "tex": "p=mv"},
    {"qid": "Q4", "label": "four", "description": "d", "concepts": [], "tex": ""},
]  # fmt: skip  (Q5 and later have no item row)


@pytest.fixture(scope="module")
def encoder() -> BertSentenceEncoder:
    return BertSentenceEncoder(packaged_default_path())


def _fold_rows(fold: int, method: str, rng: np.random.Generator, width: int = WIDTH) -> list:
    structural = rng.normal(size=(len(QIDS), width))
    semantic = rng.normal(size=(len(QIDS), width))
    hubs = rng.uniform(0.0, 0.4, size=(2, len(QIDS)))
    return [
        {"fold": fold, "method": method, "qid": q, "split": ("train", "test")[i % 2],
         "structural": structural[i].tolist(), "semantic": semantic[i].tolist(),
         "structural_hubness": hubs[0, i], "semantic_hubness": hubs[1, i]}
        for i, q in enumerate(QIDS)
    ]  # fmt: skip


def _write(table: pa.Table, path: Path) -> None:
    pq.write_table(table, str(path))


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> UPath:
    root = tmp_path_factory.mktemp("lake")
    rng = np.random.default_rng(5)
    rows = [
        *_fold_rows(1, FROZEN, rng), *_fold_rows(2, FROZEN, rng),
        *_fold_rows(1, TRAINED, rng, 4), *_fold_rows(2, TRAINED, rng, 4),
    ]  # fmt: skip
    summary = {
        "serving_fold": 2,
        "validation_mrr": {"1": {TRAINED: 0.1}, "2": {TRAINED: 0.2}},
        "ensemble_weights": {"1": {FROZEN: 0.6}, "2": {FROZEN: 0.8}},
        "ensemble_hubness_k": {"1": 5, "2": 10},
        "embedding_model": None,
        "embedding_model_identity": resolve_model(None, "a test").identity,
    }
    index = pa.Table.from_pylist(rows, INDEX_SCHEMA).replace_schema_metadata(
        {METADATA_KEY: json.dumps(summary)}
    )
    _write(index, root / "search_index.parquet")
    _write(pa.Table.from_pylist(ITEMS), root / "wikidata_formulae.parquet")
    graphs = {"qid": QIDS, "linearised_opt": [f"opt of {q}" for q in QIDS]}
    _write(pa.table(graphs), root / "opt_graphs.parquet")
    return UPath(root)


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _stored(lake: UPath, fold: int, column: str, method: str = FROZEN) -> np.ndarray:
    rows = [
        r[column]
        for r in pq.read_table(str(lake / "search_index.parquet")).to_pylist()
        if r["fold"] == fold and r["method"] == method
    ]
    return np.array(rows, dtype=np.float64)


def _scores(hits: list[Hit]) -> np.ndarray:
    by_qid = {h.qid: h.score for h in hits}
    return np.array([by_qid[q] for q in QIDS])


def test_a_text_query_scores_each_formula_as_the_ensemble_weighs_it(lake, encoder) -> None:
    """Without method or fold: the ensemble (no retrieval_scores) of the serving fold (2),
    weight × (cosine to the candidate's structural vector − ½ its structural hubness)."""
    searcher = MeaningSearcher(lake)
    assert (searcher.method, searcher.fold) == (ENSEMBLE, 2)
    hits = searcher.text_to_formulae("  kinetic \n energy ", top=len(QIDS))
    query = encoder.encode("kinetic energy")
    cosine = (_unit(_stored(lake, 2, "structural")) @ _unit(query).T)[:, 0]
    expected = 0.8 * (cosine - 0.5 * _stored(lake, 2, "structural_hubness"))
    np.testing.assert_allclose(_scores(hits), expected, atol=1e-5)
    assert [h.rank for h in hits] == list(range(1, len(QIDS) + 1))
    assert [h.qid for h in hits] == [QIDS[i] for i in np.argsort(-expected, kind="stable")]


def test_a_formula_query_scores_each_item_against_its_semantic_side(lake, encoder) -> None:
    """Fold 1 asked for: its weight (0.6) and the candidates' semantic hubness."""
    searcher = MeaningSearcher(lake, fold=1)
    hits = searcher.formula_to_concepts(MATHML, top=12)
    assert len(hits) == len(QIDS)
    query = encoder.encode(flatten(parse_mathml(MATHML)).linearised)
    cosine = (_unit(_stored(lake, 1, "semantic")) @ _unit(query).T)[:, 0]
    expected = 0.6 * (cosine - 0.5 * _stored(lake, 1, "semantic_hubness"))
    np.testing.assert_allclose(_scores(hits), expected, atol=1e-5)


def test_one_method_scores_by_plain_cosine(lake, encoder) -> None:
    searcher = MeaningSearcher(lake, method=FROZEN, fold=1)
    assert searcher.weights == {FROZEN: 1.0}
    hits = searcher.text_to_formulae("speed of light", top=len(QIDS))
    query = encoder.encode("speed of light")
    expected = (_unit(_stored(lake, 1, "structural")) @ _unit(query).T)[:, 0]
    np.testing.assert_allclose(_scores(hits), expected, atol=1e-5)


def test_hits_are_the_top_scores_in_order(lake) -> None:
    hits = MeaningSearcher(lake, method=FROZEN).text_to_formulae("momentum", top=12)
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    top2 = MeaningSearcher(lake, method=FROZEN).text_to_formulae("momentum", top=2)
    assert top2 == hits[:2]


def test_hits_carry_their_items(lake) -> None:
    hits = {h.qid: h for h in MeaningSearcher(lake, method=FROZEN).text_to_formulae("x", top=12)}
    first = hits["Q1"]
    assert (first.label, first.description, first.formula) == (
        "mass–energy",
        "E equals m c squared",
        "E=mc^2",
    )
    assert first.concepts == ["energy", "mass"]  # sorted, unlabelled ones left out
    assert hits["Q2"].formula == "opt of Q2" and hits["Q2"].concepts == []  # no LaTeX
    assert hits["Q4"].formula == "opt of Q4"  # empty LaTeX
    assert (hits["Q5"].label, hits["Q5"].formula) == (None, "opt of Q5")  # no item row
    assert {h.split for h in hits.values()} == {None}  # nothing trained: no split
    assert {h.trained_on for h in hits.values()} == {None}


def test_trained_on_says_whether_the_split_was_a_training_one() -> None:
    def hit(split):
        return Hit(1, "Q1", 0.5, None, None, split=split)

    assert (hit("train").trained_on, hit("selection").trained_on) == (True, True)
    assert (hit("test").trained_on, hit(None).trained_on) == (False, None)


def test_the_best_method_comes_from_retrieval_scores(lake, tmp_path) -> None:
    root = Path(tmp_path) / "lake"
    root.mkdir()
    for name in ("search_index", "wikidata_formulae", "opt_graphs"):
        (root / f"{name}.parquet").write_bytes((Path(str(lake)) / f"{name}.parquet").read_bytes())
    scores = root / "retrieval_scores.parquet"
    rows = [("bm25", 0.9), (FROZEN, 0.3), (FROZEN, 0.5), (TRAINED, 0.6), (TRAINED, 0.1),
            (ENSEMBLE, 0.35), (ENSEMBLE, 0.35)]  # fmt: skip
    _write(pa.table({"method": [m for m, _ in rows], "mrr": [v for _, v in rows]}), scores)
    assert MeaningSearcher(UPath(root)).method == FROZEN  # 0.4 > 0.35 = 0.35; bm25 does not search
    _write(pa.table({"method": ["bm25"], "mrr": [0.9]}), scores)
    assert MeaningSearcher(UPath(root)).method == ENSEMBLE
    assert MeaningSearcher(UPath(root), method=TRAINED).method == TRAINED


def test_a_trained_method_without_its_model_is_one_clear_error(lake) -> None:
    searcher = MeaningSearcher(lake, method=TRAINED)
    assert searcher.model(FROZEN) is None
    with pytest.raises(SearchError, match=f"no {TRAINED} model for fold 2"):
        searcher.text_to_formulae("energy")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "bm25"}, "unknown method 'bm25'"),
        ({"fold": 3}, r"no fold 3; it has \[1, 2\]"),
    ],
)
def test_a_method_or_fold_the_index_lacks_is_refused(lake, kwargs, message) -> None:
    with pytest.raises(SearchError, match=message):
        MeaningSearcher(lake, **kwargs)


def test_bad_queries_are_one_clear_error(lake) -> None:
    searcher = MeaningSearcher(lake, method=FROZEN)
    with pytest.raises(SearchError, match="the text query is empty"):
        searcher.text_to_formulae(" \n\t ")
    with pytest.raises(SearchError, match="the formula does not parse"):
        searcher.formula_to_concepts("<math><mi>x</mi>")
    with pytest.raises(SearchError, match=r"did not convert to MathML \(NoAvailableTokensError"):
        latex_to_mathml(r"\frac")  # the converter's error has no message: its type says
    with pytest.raises(SearchError, match=r"'s \{ at character 9 is never closed") as raised:
        latex_to_mathml(r"\frac{1}{2")  # the converter would guess the missing }
    assert raised.value.position == 8
    with pytest.raises(SearchError, match=r"'s \} at character 2 closes nothing"):
        latex_to_mathml(r"a}")
    assert "&#x0007B;" in latex_to_mathml(r"\{ x \}")  # escaped braces are no braces
    assert "<mi>x</mi>" in latex_to_mathml("x")


def test_missing_and_damaged_tables_name_the_fix(lake, tmp_path) -> None:
    root = Path(tmp_path) / "lake"
    root.mkdir()
    with pytest.raises(SearchError, match=r"search_index is not materialized.*make run"):
        MeaningSearcher(UPath(root))
    (root / "search_index.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(SearchError, match="not a readable Parquet table"):
        MeaningSearcher(UPath(root))
    (root / "search_index.parquet").write_bytes(
        (Path(str(lake)) / "search_index.parquet").read_bytes()
    )
    (root / "wikidata_formulae.parquet").write_bytes(b"PAR1 broken PAR1")
    searcher = MeaningSearcher(UPath(root), method=FROZEN)
    with pytest.raises(SearchError, match=r"wikidata_formulae\.parquet is not a readable"):
        searcher.text_to_formulae("energy")


def test_an_index_without_its_summary_is_unusable(lake, tmp_path) -> None:
    root = Path(tmp_path) / "lake"
    root.mkdir()
    table = pq.read_table(str(lake / "search_index.parquet")).replace_schema_metadata({})
    _write(table, root / "search_index.parquet")
    with pytest.raises(SearchError, match="the search index is unusable"):
        MeaningSearcher(UPath(root))


def test_a_sentence_model_other_than_the_indexs_is_refused(lake, tmp_path) -> None:
    root = Path(tmp_path) / "lake"
    root.mkdir()
    table = pq.read_table(str(lake / "search_index.parquet"))
    summary = json.loads(table.schema.metadata[METADATA_KEY])
    summary["embedding_model_identity"] = "0" * 32
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(summary)})
    _write(table, root / "search_index.parquet")
    searcher = MeaningSearcher(UPath(root), method=FROZEN)
    with pytest.raises(SearchError, match="is not the one the search index was built with"):
        searcher.text_to_formulae("energy")


def test_a_text_is_encoded_once_per_searcher(lake, encoder) -> None:
    searcher = MeaningSearcher(lake, method=FROZEN)
    first = searcher.text_to_formulae("energy", top=5)
    calls: list[list[str]] = []
    embedder = searcher._embedder
    encode = embedder.encode
    embedder.encode = lambda texts: calls.append(list(texts)) or encode(texts)
    assert searcher.text_to_formulae("energy", top=5) == first and calls == []
    searcher.text_to_formulae("mass", top=5)
    assert calls == [["mass"]]


def test_the_default_is_the_top_ten(lake) -> None:
    searcher = MeaningSearcher(lake, method=FROZEN)
    assert len(searcher.text_to_formulae("energy")) == 10
    assert len(searcher.formula_to_concepts(MATHML)) == 10


def test_a_searcher_reads_only_its_methods_rows_and_may_ask_the_hub(lake) -> None:
    frozen = MeaningSearcher(lake, method=FROZEN)
    assert set(frozen.index.spaces) == {FROZEN} and frozen.index.qids == QIDS
    assert set(MeaningSearcher(lake, method=TRAINED).index.spaces) == {TRAINED}
    assert set(MeaningSearcher(lake).index.spaces) == {FROZEN, TRAINED}  # the members in the index
    assert frozen.offline is False  # unless told (the hf_hub_offline setting)


def test_one_local_bert_folder_is_run_in_plain_torch(lake) -> None:
    searcher = MeaningSearcher(lake, method=FROZEN)
    searcher.text_to_formulae("energy")
    embedder = searcher._embedder
    assert embedder.engine == "torch" and embedder._model is None  # the library never loaded
    assert isinstance(embedder._plain, BertSentenceEncoder)


@pytest.fixture(scope="module")
def joined_lake(tmp_path_factory: pytest.TempPathFactory) -> UPath:
    """An index made with two models side by side (here the default twice): 768 wide."""
    root = tmp_path_factory.mktemp("joined")
    name = "all-MiniLM-L6-v2+all-MiniLM-L6-v2"
    rows = _fold_rows(1, FROZEN, np.random.default_rng(9), 2 * WIDTH)
    summary = {
        "serving_fold": 1,
        "validation_mrr": {"1": {TRAINED: 0.1}},
        "ensemble_weights": {"1": {FROZEN: 1.0}},
        "ensemble_hubness_k": {"1": 0},
        "embedding_model": name,
        "embedding_model_identity": resolve_model(name, "a test").identity,
    }
    index = pa.Table.from_pylist(rows, INDEX_SCHEMA).replace_schema_metadata(
        {METADATA_KEY: json.dumps(summary)}
    )
    _write(index, root / "search_index.parquet")
    _write(pa.Table.from_pylist(ITEMS), root / "wikidata_formulae.parquet")
    _write(pa.table({"qid": QIDS, "linearised_opt": QIDS}), root / "opt_graphs.parquet")
    return UPath(root)


def test_joined_models_embed_a_query_as_each_models_unit_vector_side_by_side(
    joined_lake, encoder
) -> None:
    hits = MeaningSearcher(joined_lake, method=FROZEN).text_to_formulae("kinetic energy", top=12)
    one = _unit(encoder.encode("kinetic energy"))[0]
    query = np.concatenate([one, one])
    expected = (_unit(_stored(joined_lake, 1, "structural")) @ _unit(query).T)[:, 0]
    np.testing.assert_allclose(_scores(hits), expected, atol=1e-4)


def test_a_trained_graph_model_reads_a_formula_query_and_its_tokens_texts(
    lake, encoder, tmp_path
) -> None:
    """A formula query through a trained graph model: its OPT parsed as the corpus was, each
    token's text vector from `opt_token_embeddings` where the corpus had the token and
    embedded now where it did not (`c` and `2` here), the model loaded once."""
    root = UPath(tmp_path / "lake")
    shutil.copytree(str(lake), str(root))
    rng = np.random.default_rng(8)
    known = TokenTexts(["E", "m", "="], rng.normal(size=(3, WIDTH)).astype(np.float32))
    rows = {"token": known.tokens, "embedding": known.vectors.tolist()}
    schema = pa.schema([("token", pa.string()), ("embedding", pa.list_(pa.float32(), WIDTH))])
    _write(pa.Table.from_pydict(rows, schema), Path(str(root)) / "opt_token_embeddings.parquet")
    training = build_opt_graphs([("Q1", MATHML), ("Q2", "<math><mi>m</mi></math>")]).graphs
    data = AlignmentData(
        qids=["Q1", "Q2"],
        graphs=training,
        semantic=np.eye(2, 5, dtype=np.float32),
        opt_text=np.eye(2, 3, dtype=np.float32),
        folds={"Q1": 1, "Q2": 1},
        token_texts=known,
    )
    untrained = dataclasses.replace(
        graph_description(token_text=True, formula_text=False, readout="mean"), fold=2
    )
    untrained = dataclasses.replace(
        untrained, settings=dataclasses.replace(untrained.settings, out_dim=4)
    )
    description = METHOD.prepare(
        data, FoldRows(train=np.array([0, 1]), test=np.array([], int)), untrained, "cpu"
    ).description
    torch.manual_seed(0)
    network = METHOD.network(description).eval()
    save_model(
        TrainedModel(description, network.state_dict(), [], None), model_directory(root, 2, TRAINED)
    )

    searcher = MeaningSearcher(root, method=TRAINED)
    hits = searcher.formula_to_concepts(MATHML, top=len(QIDS))
    assert searcher.model(TRAINED) is searcher.model(TRAINED)

    graphs = build_opt_graphs([("query", MATHML)], searcher.options).graphs
    tokens = sorted(set(graphs.column("node_tokens").to_pylist()[0]))
    assert {"c", "2"} <= set(tokens) - set(known.tokens)
    lookup = dict(zip(known.tokens, known.vectors, strict=True))
    texts = TokenTexts(
        tokens, np.stack([lookup[t] if t in lookup else encoder.encode(t) for t in tokens])
    )

    class Query:
        def graphs(self):
            return graphs

        def token_texts(self, _):
            return texts

    with torch.no_grad():
        query = network.encode_structural(METHOD.query_input(description, Query()))[0].numpy()
    expected = (_unit(_stored(lake, 2, "semantic", TRAINED)) @ _unit(query).T)[:, 0]
    np.testing.assert_allclose(_scores(hits), expected, atol=1e-5)
