"""Shared fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

# Before the package is imported: the session runs the smoke profile, as the materialized
# pipeline does, and the registry's methods follow the profile it is imported under.
os.environ["FORMULA_ASSETS_PROFILE"] = "smoke"

from formula_assets_tests.support.sparql_server import FakeWdqs

# The test modules that read the materialized smoke pipeline (the `materialized` fixture);
# test_scheduling.py keeps the list complete.
PIPELINE_MODULES = frozenset(
    f"formula_assets_tests/{path}"
    for path in (
        "audit/test_corruption.py",
        "cli/test_distributed.py",
        "cli/test_refresh.py",
        "defs/test_evaluation.py",
        "lineage/test_code_changes.py",
        "methods/test_adding_a_method.py",
        "search/test_meaning.py",
        "test_end_to_end.py",
    )
)
# The test modules that read every fold model trained on the small corpus (`small_fold_models`)
SMALL_MODEL_MODULES = frozenset(
    f"formula_assets_tests/{path}"
    for path in (
        "evaluation/test_retrieval.py",
        "search/test_index.py",
        "training/test_training.py",
    )
)
# Each costly session fixture with the modules that read it: one unit on one worker, so the
# fixture is built once
UNITS = {"materialized": PIPELINE_MODULES, "small_fold_models": SMALL_MODEL_MODULES}
# The longest units, started first in this order (the rest by xdist's own order): the daemon
# test mostly waits for the daemon's loops, so it runs beside the pipeline's unit instead of
# after everything else
FIRST = ("materialized", "formula_assets_tests/test_daemon.py", "small_fold_models")
# the collected modules with a test that reads each unit's fixture, before `-m` and `-k`
# deselect any
READERS = pytest.StashKey[dict[str, set[str]]]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[READERS] = {
        fixture: {
            item.nodeid.split("::")[0]
            for item in items
            if fixture in getattr(item, "fixturenames", ())
        }
        for fixture in UNITS
    }


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`make test` runs two pytest-xdist workers with `--dist loadfile`, refined here: the
    modules that read one costly session fixture (`UNITS`) are one unit, so one worker builds
    it once and runs them (the materialized pipeline's: the longest, so one worker spends
    most of the run on it), while the other takes every other module, each whole, so no
    module fixture is built twice; the longest units start first (`FIRST`). A serial run
    leaves one of two cores idle most of the time."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    unit_of = {module: fixture for fixture, modules in UNITS.items() for module in modules}

    class UnitsAsOneFile(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::")[0]
            return unit_of.get(module, module)

        def _assign_work_unit(self, node: Any) -> None:
            for scope in reversed(FIRST):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return UnitsAsOneFile(config, log)


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
def small_fold_models(small_corpus) -> dict[tuple[int, str], Any]:
    """Every fold × trained method on the small corpus (`SMALL_PROFILE`), trained once per
    worker for the modules that only read them: never change one."""
    from formula_assets.core.protocol import FOLDS
    from formula_assets.methods import registry
    from formula_assets.training.fold import train_fold
    from formula_assets_tests.support.small import SMALL_PROFILE, small_data

    data = small_data(small_corpus)
    return {
        (fold, method): train_fold(registry.trained_method(method), fold, data, SMALL_PROFILE)
        for fold in FOLDS
        for method in registry.trained()
    }


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
