"""`formula-assets search` over a materialized pipeline (smoke models on the stable sample)."""

import itertools
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from upath import UPath

from formula_assets.methods import registry
from formula_assets.search.layout import METADATA_KEY
from formula_assets.search.meaning import MeaningSearcher, SearchError, latex_to_mathml
from formula_assets.semantics.models import resolve_model
from formula_assets_tests.support.pipeline import pipeline


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows (or one vector) at unit length; a zero vector stays zero and scores 0 (a lexicon
    query with no known concept has no symbols)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


@pytest.fixture(scope="module")
def lake(materialized) -> UPath:
    return UPath(materialized[0].lake)


def an_item(lake: UPath) -> dict:
    formulae = pq.read_table(str(lake / "wikidata_formulae.parquet")).to_pylist()
    return next(r for r in formulae if r["mathml"] and r["concepts"])


@pytest.mark.slow
@pytest.mark.parametrize(
    "method",
    ["graph_text_cl", "sbert_dual_cl", "sbert_no_cl", "sbert_finetuned_cl", "symbol_lexicon"],
)
def test_query_path_reproduces_the_stored_vectors(lake: UPath, method: str) -> None:
    """A formula of the corpus, searched for, scores exactly as its stored vector does."""
    searcher = MeaningSearcher(lake, method=method)
    item = an_item(lake)
    hits = searcher.formula_to_concepts(item["mathml"], top=5000)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    qids = searcher.index.qids
    splits = dict(zip(qids, searcher.index.splits, strict=True))
    if method != "sbert_no_cl":
        structural, semantic = searcher.index.spaces[method]
        row = qids.index(item["qid"])
        unit = unit_rows(semantic)
        expected = unit @ unit_rows(structural[row])
        got = {h.qid: h.score for h in hits}
        assert np.allclose([got[q] for q in qids], expected, atol=1e-4)
        assert all(h.split == splits[h.qid] for h in hits)
        assert {h.trained_on for h in hits} == {True, False}
        assert all(h.trained_on == (splits[h.qid] != "test") for h in hits)
    else:
        assert {h.trained_on for h in hits} == {None}


@pytest.mark.slow
def test_the_ensemble_scores_a_query_as_table_2_does(lake: UPath) -> None:
    """Each member's cosine less half the candidate's stored hubness, weighted: a corpus
    formula, searched for, scores every item as its stored vectors do."""
    searcher = MeaningSearcher(lake, method="score_ensemble")
    assert searcher.index.hubness_k in (0, 5, 10)
    item = an_item(lake)
    hits = {h.qid: h.score for h in searcher.formula_to_concepts(item["mathml"], top=5000)}
    row = searcher.index.qids.index(item["qid"])
    expected = 0.0
    for method, weight in searcher.weights.items():
        structural, semantic = searcher.index.spaces[method]
        unit = unit_rows(semantic)
        cosine = unit @ unit_rows(structural[row])
        expected = expected + weight * (cosine - 0.5 * searcher.index.hubness[method][1])
    assert np.allclose([hits[q] for q in searcher.index.qids], expected, atol=1e-4)
    assert any(searcher.index.hubness[m][1].any() for m in searcher.weights) == (
        searcher.index.hubness_k > 0
    )


@pytest.mark.slow
def test_the_ensemble_scores_a_text_query_against_the_structural_sides_hubness(
    lake: UPath, tmp_path: Path
) -> None:
    """A text query's candidates are formulae (the structural side): each member's cosine
    less half the candidate's structural hubness, weighted. The stored hubness is replaced by
    distinct random numbers on each side, so a score read from the wrong side is seen."""
    index = pq.read_table(str(lake / "search_index.parquet"))
    rng = np.random.default_rng(5)
    n = index.num_rows
    index = index.set_column(
        index.schema.get_field_index("structural_hubness"),
        "structural_hubness",
        pa.array(rng.uniform(0, 0.5, n)),
    ).set_column(
        index.schema.get_field_index("semantic_hubness"),
        "semantic_hubness",
        pa.array(rng.uniform(0.5, 1.0, n)),
    )
    for entry in Path(str(lake)).iterdir():  # the models and every other table as they are
        if entry.name != "search_index.parquet":
            (tmp_path / entry.name).symlink_to(entry)
    pq.write_table(index, tmp_path / "search_index.parquet")
    searcher = MeaningSearcher(UPath(tmp_path), method="score_ensemble")
    text = "energy of a moving body"
    hits = {h.qid: h.score for h in searcher.text_to_formulae(text, top=5000)}
    expected = 0.0
    for method, weight in searcher.weights.items():
        query, _ = searcher._semantic_query(method, text)
        structural = searcher.index.spaces[method][0]
        unit = unit_rows(structural)
        cosine = unit @ unit_rows(query)
        expected = expected + weight * (cosine - 0.5 * searcher.index.hubness[method][0])
    assert len(hits) == len(searcher.index.qids)
    assert np.allclose([hits[q] for q in searcher.index.qids], expected, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("damaged", ["search_index", "wikidata_formulae"])
def test_a_damaged_table_is_one_clear_error(lake: UPath, tmp_path: Path, damaged: str) -> None:
    for table in Path(str(lake)).glob("*.parquet"):
        (tmp_path / table.name).symlink_to(table)
    (tmp_path / f"{damaged}.parquet").unlink()
    (tmp_path / f"{damaged}.parquet").write_bytes(b"not parquet")
    with pytest.raises(SearchError, match=f"{damaged}.parquet is not a readable Parquet table"):
        MeaningSearcher(UPath(tmp_path), method="sbert_no_cl").text_to_formulae("mass", top=3)


@pytest.mark.slow
def test_best_method_comes_from_retrieval_scores(lake: UPath) -> None:
    scores = pq.read_table(str(lake / "retrieval_scores.parquet")).to_pandas()
    best = scores.groupby("method")["mrr"].mean().idxmax()
    searcher = MeaningSearcher(lake)
    assert searcher.method == best
    hits = searcher.text_to_formulae("energy of a moving body", top=3)
    assert len(hits) == 3 and all(h.qid.startswith("Q") for h in hits)


@pytest.mark.slow
def test_cli_prints_items_and_explains_failures(materialized, tmp_path: Path) -> None:
    run = materialized[0]
    found = run.run("search", "--latex", "E = m c^2", "--top", "3")
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert lines[0].startswith("latex query, channels: structure, meaning (meaning: ")
    hits = [line for line in lines if line.lstrip()[:2] in ("1.", "2.", "3.")]
    assert len(hits) == 3
    said = [line for line in lines if line.strip().startswith("found by ")]
    assert len(said) == 3
    assert all(("trained on" in line) != ("held out" in line) for line in said)
    assert "what the query's symbols most likely denote:" in found.stdout
    text = run.run("search", "--text", "kinetic energy", "--top", "2", "--method", "sbert_no_cl")
    assert text.returncode == 0 and "(meaning: sbert_no_cl, fold" in text.stdout
    as_json = run.run("search", "--json", "--text", "kinetic energy", "--top", "4")
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert len(document["hits"]) == 4
    assert all(isinstance(h["trained_on"], bool) for h in document["hits"])  # trained models
    bad = run.run("search", "--latex", "\\frac{")
    assert bad.returncode == 2 and "is never closed" in bad.stderr
    broken = tmp_path / "broken.mml"
    broken.write_text("<math><mi>x</mi>")
    assert "does not parse" in run.run("search", "--mathml", str(broken)).stderr
    empty = pipeline(tmp_path / "empty", tmp_path / "cache")
    nothing = empty.run("search", "--text", "mass")
    assert nothing.returncode == 2 and "run `make run`" in nothing.stderr


@pytest.mark.slow
def test_a_sentence_model_changed_since_the_index_was_built_is_refused(
    lake: UPath, tmp_path: Path
) -> None:
    """Queries are embedded with the model: one whose files are no longer those the index's
    vectors were made with (a fine-tune saved over it) would rank nonsense, so it is refused."""
    index = pq.read_table(str(lake / "search_index.parquet"))
    metadata = dict(index.schema.metadata)
    summary = json.loads(metadata[METADATA_KEY])
    assert summary["embedding_model_identity"] == resolve_model(None, "a test").identity
    for table in Path(str(lake)).glob("*.parquet"):
        if table.name != "search_index.parquet":
            (tmp_path / table.name).symlink_to(table)
    summary["embedding_model_identity"] = "0" * 32  # the vectors of some other model
    metadata[METADATA_KEY] = json.dumps(summary).encode()
    pq.write_table(index.replace_schema_metadata(metadata), tmp_path / "search_index.parquet")
    with pytest.raises(SearchError, match="not the one the search index was built with"):
        MeaningSearcher(UPath(tmp_path), method="sbert_no_cl").text_to_formulae("mass", top=3)


def test_latex_conversion() -> None:
    assert latex_to_mathml("x^2").startswith("<math")
    with pytest.raises(SearchError, match="did not convert"):
        latex_to_mathml("\\frac")


@pytest.mark.slow
def test_a_query_loads_only_what_it_needs(materialized) -> None:
    """A cold search reads one fold of the index and imports no Table 2, BM25, SciPy or
    sentence-transformers code: what it skips is what keeps a query within seconds."""
    import subprocess
    import sys

    run = materialized[0]
    probe = (
        "import sys\n"
        "from upath import UPath\n"
        "from formula_assets.search.meaning import MeaningSearcher\n"
        f"s = MeaningSearcher(UPath({str(run.lake)!r}))\n"
        "s.formula_to_concepts('<math><mi>F</mi><mo>=</mo><mi>m</mi><mi>a</mi></math>', 3)\n"
        "s.text_to_formulae('kinetic energy', 3)\n"
        "print(len(s.index.qids), s.fold, sorted(s.index.spaces))\n"
        "heavy = ('scipy', 'rank_bm25', 'sentence_transformers', 'transformers', 'pandas')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
        "print(sorted(m for m in sys.modules if m.startswith('formula_assets.evaluation')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=run.env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    items, _, methods = out.stdout.splitlines()[0].split(" ", 2)
    assert methods == str(sorted(m.name for m in registry.ensemble_members()))
    heavy, evaluation = out.stdout.splitlines()[1:3]
    assert heavy in ("[]", "['pandas']"), heavy  # pyarrow imports pandas on its own
    loaded = ["", ".ensemble", ".hubness", ".ranking"]
    assert evaluation == str([f"formula_assets.evaluation{m}" for m in loaded])
    # one row group per fold × method, so that reading one fold skips the others
    file = pq.ParquetFile(str(run.lake / "search_index.parquet"))
    blocks = set()
    for group in range(file.num_row_groups):
        rows = file.read_row_group(group, columns=["fold", "method"])
        assert rows.num_rows == int(items)
        blocks.add(tuple(set(rows[c].to_pylist()).pop() for c in ("fold", "method")))
        assert all(len(set(rows[c].to_pylist())) == 1 for c in ("fold", "method"))
    assert (
        len(blocks) == file.num_row_groups == len(registry.indexed()) * len({f for f, _ in blocks})
    )
