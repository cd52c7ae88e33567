"""`formula-assets search` over a materialized pipeline (smoke models on the stable sample)."""

import itertools
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from upath import UPath

from formula_assets.search.searcher import Searcher, SearchError, latex_to_mathml
from formula_assets_tests.pipeline import pipeline


@pytest.fixture(scope="module")
def lake(materialized) -> UPath:
    return UPath(materialized[0].lake)


def an_item(lake: UPath) -> dict:
    formulae = pq.read_table(str(lake / "wikidata_formulae.parquet")).to_pylist()
    return next(r for r in formulae if r["mathml"] and r["concepts"])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["graph_text_cl", "sbert_dual_cl", "sbert_no_cl"])
def test_query_path_reproduces_the_stored_vectors(lake: UPath, method: str) -> None:
    """A formula of the corpus, searched for, scores exactly as its stored vector does."""
    searcher = Searcher(lake, method=method)
    item = an_item(lake)
    hits = searcher.formula_to_concepts(item["mathml"], top=5000)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    qids = searcher.index.qids
    splits = dict(zip(qids, searcher.index.splits, strict=True))
    if method != "sbert_no_cl":
        structural, semantic = searcher.index.spaces[method]
        row = qids.index(item["qid"])
        unit = semantic / np.linalg.norm(semantic, axis=1, keepdims=True)
        expected = unit @ (structural[row] / np.linalg.norm(structural[row]))
        got = {h.qid: h.score for h in hits}
        assert np.allclose([got[q] for q in qids], expected, atol=1e-4)
        assert all(h.split == splits[h.qid] for h in hits)
        assert {h.trained_on for h in hits} == {True, False}
        assert all(h.trained_on == (splits[h.qid] != "test") for h in hits)
    else:
        assert {h.trained_on for h in hits} == {None}


@pytest.mark.slow
def test_best_method_comes_from_retrieval_scores(lake: UPath) -> None:
    scores = pq.read_table(str(lake / "retrieval_scores.parquet")).to_pandas()
    best = scores.groupby("method")["mrr"].mean().idxmax()
    searcher = Searcher(lake)
    assert searcher.method == best
    hits = searcher.text_to_formulae("energy of a moving body", top=3)
    assert len(hits) == 3 and all(h.qid.startswith("Q") for h in hits)


@pytest.mark.slow
def test_cli_prints_items_and_explains_failures(materialized, tmp_path: Path) -> None:
    run = materialized[0]
    found = run.run("search", "--latex", "E = m c^2", "--top", "3")
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert lines[0].startswith("formula → concepts with ")
    hits = [line for line in lines if line.lstrip()[:2] in ("1.", "2.", "3.")]
    assert len(hits) == 3
    assert all(("trained on" in line) != ("held out" in line) for line in hits)
    text = run.run("search", "--text", "kinetic energy", "--top", "2", "--method", "sbert_no_cl")
    assert text.returncode == 0 and "text → formulae with sbert_no_cl" in text.stdout
    bad = run.run("search", "--latex", "\\frac{")
    assert bad.returncode == 2 and "did not convert" in bad.stderr
    broken = tmp_path / "broken.mml"
    broken.write_text("<math><mi>x</mi>")
    assert "does not parse" in run.run("search", "--mathml", str(broken)).stderr
    empty = pipeline(tmp_path / "empty", tmp_path / "cache")
    nothing = empty.run("search", "--text", "mass")
    assert nothing.returncode == 2 and "run `make run`" in nothing.stderr


def test_latex_conversion() -> None:
    assert latex_to_mathml("x^2").startswith("<math")
    with pytest.raises(SearchError, match="did not convert"):
        latex_to_mathml("\\frac{")
