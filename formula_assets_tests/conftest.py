"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pytest

from formula_assets_tests.support.sparql_server import FakeWdqs

PIPELINE_GROUP = "pipeline"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With pytest-xdist's `--dist loadgroup` (`make test`: two workers), every test that
    reads the materialized smoke pipeline runs on one worker, which builds it once, and every
    other module runs whole on one worker, so that no session or module fixture is built
    twice; the two workers share the CPU that one serial run leaves half idle."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        uses_pipeline = "materialized" in getattr(item, "fixturenames", ())
        group = PIPELINE_GROUP if uses_pipeline else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def sparql_server() -> Iterator[FakeWdqs]:
    """A fake Wikidata Query Service on a free local port, stopped after the test."""
    with FakeWdqs() as server:
        yield server


@dataclass
class SmallCorpus:
    """A stable 160-formula sample of the snapshot with every representation computed."""

    formulae: pa.Table
    graphs: pa.Table
    annotations: pa.Table
    semantic: pa.Table
    opt_text: pa.Table
    folds: pa.Table
    tokens: pa.Table
    symbols: pa.Table  # concept_symbols


@pytest.fixture(scope="session")
def small_corpus() -> SmallCorpus:
    from formula_assets.ingest.records import records_to_table
    from formula_assets.ingest.snapshot import snapshot_records
    from formula_assets.ingest.sources import sample_records
    from formula_assets.semantics.annotations import build_annotations
    from formula_assets.semantics.models import TextEmbedder, resolve_model
    from formula_assets.semantics.tables import opt_text_vectors, semantic_vectors, token_vectors
    from formula_assets.syntax.concept_symbols import build_concept_symbols
    from formula_assets.syntax.opt import build_opt_graphs, parse_options
    from formula_assets.training.folds import assign_folds

    formulae = records_to_table(sample_records(list(snapshot_records()), 160))
    graphs = build_opt_graphs(
        zip(formulae["qid"].to_pylist(), formulae["mathml"].to_pylist(), strict=True)
    ).graphs
    annotations = build_annotations(formulae.to_pylist())
    embedder = TextEmbedder(resolve_model(None, "the default"))
    semantic, _, _ = semantic_vectors(annotations, embedder, None)
    opt_text, _ = opt_text_vectors(graphs, embedder, None)
    tokens, _ = token_vectors(graphs, embedder, None)
    folds = assign_folds(
        zip(formulae["qid"].to_pylist(), formulae["paper_fold"].to_pylist(), strict=True)
    )
    symbols = build_concept_symbols(
        zip(formulae["qid"].to_pylist(), formulae["concepts"].to_pylist(), strict=True),
        parse_options("distinct"),
    )
    return SmallCorpus(formulae, graphs, annotations, semantic, opt_text, folds, tokens, symbols)


@pytest.fixture(scope="session")
def embedding_cache(tmp_path_factory: pytest.TempPathFactory):
    """One embedding cache for every pipeline test of the session: texts embed once."""
    return tmp_path_factory.mktemp("embedding_cache")


@pytest.fixture(scope="session")
def materialized(tmp_path_factory: pytest.TempPathFactory, embedding_cache):
    """The whole graph materialized once per session by `formula-assets refresh` (smoke)."""
    from formula_assets_tests.support.pipeline import pipeline

    run = pipeline(tmp_path_factory.mktemp("baseline"), embedding_cache)
    completed = run.run("refresh")
    assert completed.returncode == 0, completed.stderr[-3000:]
    return run, completed.stdout
